package server

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Agent versions (docs/forks.md): every definition version the server ran
// is kept in its store, so a thread whose upgrade policy is "pinned" (set
// by its first message, {"upgrade": "pinned"}) keeps running the version
// it started with across definition changes and restarts, until
//
//	POST /threads/{id}/agent  {"version": HASH} → 202
//
// upgrades it (an agent message naming the version, recorded in history).
//
//	GET /agents/{name}/versions → {"agent", "current", "versions": [{"hash", "stored", "current", "threads", ...}]}
//
// lists the kept versions with how many threads run each. As with GET
// /agents, instructions stay on the server.

// keepAgentVersions stores the current definitions (a version already
// kept keeps its first time) and makes every kept version resolvable.
func (s *Server) keepAgentVersions(ctx context.Context) error {
	if s.agents == nil || s.agentStore == nil {
		return nil
	}
	if err := s.agentStore.PutAgents(ctx, s.agents.Current(time.Now())); err != nil {
		return err
	}
	kept, err := s.agentStore.LoadAgents(ctx)
	if err != nil {
		return err
	}
	if err := s.agents.Keep(kept); err != nil {
		// Those versions' threads fail with a clear error if they are pinned to them.
		s.log.Warn("some agent versions cannot run any more", "error", err)
	}
	s.log.Info("agent versions kept", "versions", len(kept))
	return nil
}

// versionInfo is one version of GET /agents/{name}/versions.
type versionInfo struct {
	Hash   string    `json:"hash"`
	Stored time.Time `json:"stored"`
	// Current is the version new and unpinned threads run.
	Current bool   `json:"current,omitempty"`
	Model   string `json:"model,omitempty"`
	// Tools are the toolsets it may use (absent: all of them).
	Tools []string `json:"tools,omitempty"`
	// Threads counts the threads whose latest completion ran it.
	Threads int `json:"threads"`
	// Pinned counts those of them that are pinned to it.
	Pinned int `json:"pinned"`
}

type versionsResponse struct {
	Agent    string        `json:"agent"`
	Current  string        `json:"current,omitempty"`
	Versions []versionInfo `json:"versions"`
}

func (s *Server) listAgentVersions(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if s.agents == nil {
		writeError(w, http.StatusNotFound, "name", "this server defines no agents")
		return
	}
	kept, err := s.agentStore.LoadAgents(r.Context())
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "reading the agent versions: %v", err)
		return
	}
	resp := versionsResponse{Agent: name, Versions: []versionInfo{}}
	if v, ok := s.agents.Agent(name); ok && name != "" {
		resp.Current = v.Hash
	}
	at := map[string]int{}
	for _, k := range kept {
		if k.Name != name {
			continue
		}
		at[k.Hash] = len(resp.Versions)
		resp.Versions = append(resp.Versions, versionInfo{Hash: k.Hash, Stored: k.Stored.UTC(), Current: k.Hash == resp.Current,
			Model: k.Definition.Model, Tools: slices.Clone(k.Definition.Tools)})
	}
	if len(resp.Versions) == 0 {
		writeError(w, http.StatusNotFound, "name", "no version of agent %q is kept (defined: %s)", name, strings.Join(s.agents.Names(), ", "))
		return
	}
	if ix, ok := s.store.(versionIndex); ok {
		counts, err := ix.VersionCounts(r.Context(), name, s.agents.Default() == name)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "", "%v", err)
			return
		}
		for _, c := range counts {
			if i, ok := at[c.Hash]; ok {
				resp.Versions[i].Threads += c.Threads
				resp.Versions[i].Pinned += c.Pinned
			}
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	ids := s.store.Threads()
	if len(ids) > s.set.maxListed {
		ids = ids[:s.set.maxListed]
	}
	for _, id := range ids {
		th, err := s.store.Load(r.Context(), id)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", id, err)
			return
		}
		if s.agentOf(&th.State) != name {
			continue
		}
		if i, ok := at[th.State.AgentHash]; ok {
			resp.Versions[i].Threads++
			if th.State.Upgrade == runtime.UpgradePinned {
				resp.Versions[i].Pinned++
			}
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// versionIndex is a store that counts threads by agent version without
// loading them (the sqlite store's digests).
type versionIndex interface {
	VersionCounts(ctx context.Context, agent string, agentIsDefault bool) ([]disk.VersionCount, error)
}

// upgradeAgent answers POST /threads/{id}/agent with a version: the
// thread's agent (or the one named) at that kept version.
func (s *Server) upgradeAgent(w http.ResponseWriter, r *http.Request, thread string, req agentRequest) {
	th, err := s.store.Load(r.Context(), thread)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", thread, err)
		return
	}
	if th.State.Version == 0 && th.State.Parent == "" {
		writeError(w, http.StatusNotFound, "thread_id", "thread %s has no history yet", thread)
		return
	}
	name := req.Agent
	if name == "" {
		name = s.agentOf(&th.State)
	}
	v, ok := s.agents.AgentVersion(name, req.Version)
	if !ok {
		writeError(w, http.StatusBadRequest, "version", "version %s of agent %q is not kept (see GET /agents/%s/versions)", req.Version, name, name)
		return
	}
	if th.State.Upgrade != runtime.UpgradePinned {
		if cur, ok := s.agents.Agent(name); !ok || cur.Hash != v.Hash {
			writeError(w, http.StatusConflict, "version", "thread %s follows the latest version of its agent; only a pinned thread (first message with \"upgrade\": \"pinned\") runs an older one", thread)
			return
		}
	}
	msg := runtime.Message{V: runtime.MessageVersion, ID: req.ID, ThreadID: thread, Kind: runtime.KindAgent, Agent: name, Text: v.Hash}
	if !s.sendSwitch(w, r, &msg) {
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"id": msg.ID, "thread_id": thread, "agent": name, "version": v.Hash})
}
