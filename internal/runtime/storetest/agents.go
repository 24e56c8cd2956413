package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// RunAgents runs the agent version store conformance tests: versions are
// kept by (name, hash), a second put of a kept version changes nothing
// (its first stored time stays), and definitions round-trip whole.
// newStore must return an empty store.
func RunAgents(t *testing.T, newStore func(t *testing.T) runtime.AgentStore) {
	ctx := context.Background()
	s := newStore(t)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	v1 := runtime.Agent{Name: "coder", Instructions: "You write Go. <&> ✓", Model: "m", Tools: []string{"sandbox", "threads"},
		Limits: &runtime.AgentLimits{MaxCompletions: 3}, Spawnable: []string{"coder"}, Priority: runtime.PriorityBackground}
	v2 := v1
	v2.Instructions = "You write careful Go."
	other := runtime.Agent{Name: "reviewer", Instructions: "You review."}
	if got, err := s.LoadAgents(ctx); err != nil || len(got) != 0 {
		t.Fatalf("empty store: %v, %v", got, err)
	}
	if err := s.PutAgents(ctx, []runtime.StoredAgent{runtime.NewStoredAgent(v1, t0), runtime.NewStoredAgent(other, t0)}); err != nil {
		t.Fatal(err)
	}
	// The next deploy: v1 again (kept as it was), v2 new.
	if err := s.PutAgents(ctx, []runtime.StoredAgent{runtime.NewStoredAgent(v1, t0.Add(time.Hour)), runtime.NewStoredAgent(v2, t0.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{"coder@" + v1.Hash(): t0, "reviewer@" + other.Hash(): t0, "coder@" + v2.Hash(): t0.Add(time.Hour)}
	if len(got) != len(want) {
		t.Fatalf("%d versions kept, want %d: %+v", len(got), len(want), got)
	}
	for _, v := range got {
		at, ok := want[v.Name+"@"+v.Hash]
		if !ok || !v.Stored.Equal(at) {
			t.Errorf("version %s@%s stored %v, want %v (known: %v)", v.Name, v.Hash, v.Stored, at, ok)
		}
		if h := v.Definition.Hash(); h != v.Hash {
			t.Errorf("version %s@%s reads back as a definition hashing to %s: %+v", v.Name, v.Hash, h, v.Definition)
		}
	}
}
