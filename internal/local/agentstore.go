package local

import (
	"context"
	"slices"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// AgentStore keeps agent definition versions in memory
// (runtime.AgentStore): `serve -store memory` and tests.
type AgentStore struct {
	mu       sync.Mutex
	versions []runtime.StoredAgent
}

var _ runtime.AgentStore = (*AgentStore)(nil)

// PutAgents stores the versions not kept yet.
func (s *AgentStore) PutAgents(ctx context.Context, versions []runtime.StoredAgent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range versions {
		if !slices.ContainsFunc(s.versions, func(o runtime.StoredAgent) bool { return o.Name == v.Name && o.Hash == v.Hash }) {
			s.versions = append(s.versions, v)
		}
	}
	return nil
}

// LoadAgents returns every kept version, in the order they were stored.
func (s *AgentStore) LoadAgents(ctx context.Context) ([]runtime.StoredAgent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.versions), nil
}
