package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Agent versions: every version of a definition a deployment has run is
// kept (AgentStore, content-addressed by Agent.Hash), so that a thread whose
// upgrade policy is UpgradePinned goes on running the version it started
// with after the definition changed, until a person upgrades it (a
// KindAgent message naming a version, recorded in history). A thread with
// the default policy (UpgradeLatest) runs the current definition, as
// before; the change is recorded as a marker (applyAgent).

// StoredAgent is one kept version of an agent definition.
type StoredAgent struct {
	Name string `json:"name"`
	// Hash is Definition.Hash(), the key.
	Hash       string `json:"hash"`
	Definition Agent  `json:"definition"`
	// Stored is when the version was first stored.
	Stored time.Time `json:"stored"`
}

// NewStoredAgent returns a's stored form.
func NewStoredAgent(a Agent, now time.Time) StoredAgent {
	return StoredAgent{Name: a.Name, Hash: a.Hash(), Definition: a, Stored: now}
}

// AgentStore keeps agent definition versions. PutAgents is idempotent: a
// version already kept (same name and hash) keeps its first Stored time.
// Implementations: local.AgentStore (memory), disk.AgentStore, dsql.Store.
type AgentStore interface {
	PutAgents(ctx context.Context, versions []StoredAgent) error
	LoadAgents(ctx context.Context) ([]StoredAgent, error)
}

// AgentVersions is implemented by Agents that can resolve a kept version
// by its hash (AgentSet, after Keep). The engine uses it for pinned
// threads and for upgrades to a named version.
type AgentVersions interface {
	AgentVersion(name, hash string) (*AgentVersion, bool)
}

// keptVersions are an AgentSet's earlier versions.
type keptVersions struct {
	mu sync.RWMutex
	m  map[string]*AgentVersion // name \x00 hash
	// source, when set, is read (until a read succeeds) the first time a
	// version is asked for that the set does not hold.
	source AgentStore
	loaded bool
}

// LoadMissingFrom makes AgentVersion read store's kept versions the first
// time it is asked for one the set does not hold (a pinned thread on a
// version from before this process), so a process that never needs one
// never reads them. A failed read is tried again at the next miss.
func (s *AgentSet) LoadMissingFrom(store AgentStore) {
	s.kept.mu.Lock()
	s.kept.source, s.kept.loaded = store, false
	s.kept.mu.Unlock()
}

// loadMissing reads the source once; it reports whether it read.
func (s *AgentSet) loadMissing() bool {
	s.kept.mu.RLock()
	src, done := s.kept.source, s.kept.loaded
	s.kept.mu.RUnlock()
	if src == nil || done {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	versions, err := src.LoadAgents(ctx)
	if err != nil {
		return false
	}
	_ = s.Keep(versions) // a version that cannot run stays unresolved: its thread fails saying so
	s.kept.mu.Lock()
	s.kept.loaded = true
	s.kept.mu.Unlock()
	return true
}

func keptKey(name, hash string) string { return name + "\x00" + hash }

// Keep makes versions resolvable by AgentVersion, resolving their models
// now; a version whose model cannot be resolved any more is left out and
// reported in the error (the others are kept).
func (s *AgentSet) Keep(versions []StoredAgent) error {
	var bad []string
	for _, sv := range versions {
		a := sv.Definition
		if h := a.Hash(); h != sv.Hash || a.Name != sv.Name {
			bad = append(bad, fmt.Sprintf("%s@%s: the definition hashes to %s@%s", sv.Name, sv.Hash, a.Name, h))
			continue
		}
		v := &AgentVersion{Agent: a, Hash: sv.Hash}
		if s.models != nil {
			m, cw, err := s.models(a.Model)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s@%s: %v", sv.Name, sv.Hash, err))
				continue
			}
			v.Model, v.ContextWindow = m, cw
		}
		s.keep(v)
	}
	if len(bad) > 0 {
		return fmt.Errorf("runtime: agent versions not kept: %v", bad)
	}
	return nil
}

func (s *AgentSet) keep(v *AgentVersion) {
	s.kept.mu.Lock()
	defer s.kept.mu.Unlock()
	if s.kept.m == nil {
		s.kept.m = map[string]*AgentVersion{}
	}
	if _, ok := s.kept.m[keptKey(v.Agent.Name, v.Hash)]; !ok {
		s.kept.m[keptKey(v.Agent.Name, v.Hash)] = v
	}
}

// AgentVersion implements AgentVersions: the current version when its hash
// is hash, else a version kept with Keep or current earlier in this
// process. name "" is the default agent.
func (s *AgentSet) AgentVersion(name, hash string) (*AgentVersion, bool) {
	if v, ok := s.Agent(name); ok && v.Hash == hash {
		return v, true
	}
	if name == "" {
		name = s.Default()
	}
	if v, ok := s.keptVersion(name, hash); ok {
		return v, true
	}
	if s.loadMissing() {
		return s.keptVersion(name, hash)
	}
	return nil, false
}

func (s *AgentSet) keptVersion(name, hash string) (*AgentVersion, bool) {
	s.kept.mu.RLock()
	defer s.kept.mu.RUnlock()
	v, ok := s.kept.m[keptKey(name, hash)]
	return v, ok
}

// Current returns the current definitions in their stored form, sorted by
// name.
func (s *AgentSet) Current(now time.Time) []StoredAgent {
	snap := s.cur.Load()
	out := make([]StoredAgent, 0, len(snap.byName))
	for _, v := range snap.byName {
		out = append(out, StoredAgent{Name: v.Agent.Name, Hash: v.Hash, Definition: v.Agent, Stored: now})
	}
	slices.SortFunc(out, func(a, b StoredAgent) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// pinnedAgent returns the version a pinned thread runs: the one its state
// names. ok is false when the thread is not pinned (or not bound to a
// version yet); an error when its version is not kept.
func (s *slice) pinnedAgent() (v *AgentVersion, ok bool, err error) {
	if s.st.Upgrade != UpgradePinned || s.st.AgentHash == "" {
		return nil, false, nil
	}
	if v, found := s.e.Agents.Agent(s.st.Agent); found && v.Hash == s.st.AgentHash {
		return v, true, nil // its version is the current one
	}
	if va, is := s.e.Agents.(AgentVersions); is {
		if v, found := va.AgentVersion(s.st.Agent, s.st.AgentHash); found {
			return v, true, nil
		}
	}
	return nil, true, Permanent(fmt.Errorf("runtime: thread %s is pinned to version %s of agent %q, which this deployment does not keep (upgrade it to a kept version)",
		s.threadID, s.st.AgentHash, s.st.Agent))
}

// upgradeAgent folds a KindAgent message naming a version (Text): the
// thread runs that kept version of the agent from now on (a pinned thread
// until the next upgrade), recorded as an agent marker.
func (s *slice) upgradeAgent(ctx context.Context, m Message) bool {
	var v *AgentVersion
	ok := false
	if va, is := s.e.Agents.(AgentVersions); is {
		v, ok = va.AgentVersion(m.Agent, m.Text)
	}
	if !ok {
		s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "version", Reason: fmt.Sprintf("version %s of agent %q is not kept", m.Text, m.Agent)})
		return false
	}
	prev := s.st.AgentHash
	s.st.Agent, s.st.AgentHash = v.Agent.Name, v.Hash
	s.agent, s.toolset = agentState{}, nil // resolved again for the version now bound
	args, _ := json.Marshal(agentMarker{Agent: v.Agent.Name, Hash: v.Hash, Previous: prev})
	s.appendItem(Item{Kind: ItemMarker, Name: AgentMarkerName, Input: m.ID, Args: string(args),
		Text: fmt.Sprintf("agent %s: upgraded to definition version %s (was %s)", v.Agent.Name, v.Hash, prev)})
	return false
}
