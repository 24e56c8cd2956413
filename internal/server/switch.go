package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// A thread's model can be switched by a person:
//
//	POST /threads/{id}/model  {"model": "name"} → 202; "" goes back to the default
//
// The switch is a message like any other: the engine records it in the
// thread's history (a marker, shown as a "model_switched" event) and in its
// state, and the completions after it carry the name in
// runtime.CompletionRequest.Model, which the server routes on; it wins over
// the model of the thread's agent.
//
//	POST /threads/{id}/agent  {"agent": "name"} → 202
//
// switches the agent the thread runs as, the same way: an agent message,
// recorded in history ("agent_switched"); the next completion runs the new
// agent's current definition (instructions, model, tools, limits).

// modelSet builds the catalog's other models on first use.
type modelSet struct {
	mu    sync.Mutex
	built map[string]runtime.Model
}

func (ms *modelSet) get(ctx context.Context, s *Server, name string) (runtime.Model, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if m, ok := ms.built[name]; ok {
		return m, nil
	}
	if s.cfg.Models == nil {
		return nil, fmt.Errorf("server: the thread asks for model %q, but there is no models catalog", name)
	}
	mc, err := s.cfg.Models.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("server: the thread's model %q: %w", name, err)
	}
	m, err := model.FromConfig(ctx, mc, append([]model.Option{model.WithGetenv(s.opts.Getenv)}, s.opts.ModelOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("server: building model %q: %w", name, err)
	}
	if ms.built == nil {
		ms.built = map[string]runtime.Model{}
	}
	ms.built[name] = m
	return m, nil
}

// modelRequest is the body of POST /threads/{id}/model.
type modelRequest struct {
	Model *string `json:"model"`
	ID    string  `json:"id,omitempty"`
}

func (s *Server) switchModel(w http.ResponseWriter, r *http.Request) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	var req modelRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if req.Model == nil {
		writeError(w, http.StatusBadRequest, "model", "missing: the name of a model of the catalog (\"\" for the default, %q)", s.set.model.Name)
		return
	}
	name := ""
	if *req.Model != "" {
		if name, ok = s.checkModel(w, r, *req.Model); !ok {
			return
		}
	}
	msg := runtime.Message{V: runtime.MessageVersion, ID: req.ID, ThreadID: thread, Kind: runtime.KindModel, Text: name}
	if !s.sendSwitch(w, r, &msg) {
		return
	}
	shown := name
	if shown == "" {
		shown = s.set.model.Name
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"id": msg.ID, "thread_id": thread, "model": shown})
}

// agentRequest is the body of POST /threads/{id}/agent.
type agentRequest struct {
	Agent string `json:"agent,omitempty"`
	// Version, when set, is a kept version of the agent (default: the
	// thread's) to upgrade a pinned thread to (versions.go).
	Version string `json:"version,omitempty"`
	ID      string `json:"id,omitempty"`
}

func (s *Server) switchAgent(w http.ResponseWriter, r *http.Request) {
	thread, ok := threadID(w, r)
	if !ok {
		return
	}
	var req agentRequest
	if !s.decodeBody(w, r, &req) {
		return
	}
	if s.agents == nil {
		writeError(w, http.StatusBadRequest, "agent", "this server defines no agents (see the agents configuration)")
		return
	}
	if req.Version != "" {
		s.upgradeAgent(w, r, thread, req)
		return
	}
	if _, ok := s.agents.Agent(req.Agent); !ok || req.Agent == "" {
		writeError(w, http.StatusBadRequest, "agent", "unknown agent %q", req.Agent)
		return
	}
	msg := runtime.Message{V: runtime.MessageVersion, ID: req.ID, ThreadID: thread, Kind: runtime.KindAgent, Agent: req.Agent}
	if !s.sendSwitch(w, r, &msg) {
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"id": msg.ID, "thread_id": thread, "agent": req.Agent})
}

// sendSwitch sends a switch message to its thread, which must exist and be
// open, giving it a fresh ID when the request named none. It answers the
// request itself and reports false when it did not send.
func (s *Server) sendSwitch(w http.ResponseWriter, r *http.Request, msg *runtime.Message) bool {
	th, err := s.store.Load(r.Context(), msg.ThreadID)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "loading thread %s: %v", msg.ThreadID, err)
		return false
	}
	if th.State.Closed {
		writeError(w, http.StatusConflict, "thread_id", "thread %s is closed", msg.ThreadID)
		return false
	}
	if msg.ID == "" {
		msg.ID = newMessageID()
	}
	if err := s.sys.Send(r.Context(), *msg); err != nil {
		var bm *runtime.BadMessageError
		if errors.As(err, &bm) {
			writeError(w, http.StatusBadRequest, bm.Field, "%s", bm.Reason)
			return false
		}
		writeError(w, http.StatusServiceUnavailable, "", "enqueueing the switch: %v", err)
		return false
	}
	return true
}
