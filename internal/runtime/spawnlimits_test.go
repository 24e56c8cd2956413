package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type noAgents struct{}

func (noAgents) Agent(name string) (*AgentVersion, bool) { return nil, false }

// spawn_thread refuses a child past MaxChildren: with as many children
// alive as the limit, the next spawn gets an error the model can read.
func TestSpawnThreadRefusesAtTheChildrenLimit(t *testing.T) {
	t.Parallel()
	env := &SyncEnv{Thread: &Thread{ID: "main"}, State: &ThreadState{Stack: []string{"main"}, Open: []string{"c1", "c2"}}, MaxChildren: 2}
	inv := Invocation{ThreadID: "main", CallID: "call1", Name: "spawn_thread", Args: `{"instructions":"one more","child_of":["main"]}`}
	_, err := spawnThread(context.Background(), env, inv)
	var rej *ToolRejectedError
	if !errors.As(err, &rej) || !strings.Contains(rej.Reason, "2 children alive, its limit") {
		t.Fatalf("spawn with 2 children alive and a limit of 2: %v, want a refusal naming the limit", err)
	}
}

// An agent may spawn only the agents it lists as Spawnable (itself when it
// lists none); the refusal names what it may spawn.
func TestSpawnAgentRefusalNamesTheSpawnable(t *testing.T) {
	t.Parallel()
	inv := Invocation{ThreadID: "main", CallID: "call1", Name: "spawn_thread"}
	for _, tc := range []struct {
		spawnable []string
		want      string
	}{
		{[]string{"helper"}, "(spawnable: helper)"},
		{nil, "(spawnable: lead)"},
	} {
		env := &SyncEnv{Thread: &Thread{ID: "main"}, State: &ThreadState{Stack: []string{"main"}},
			Agent: &AgentVersion{Agent: Agent{Name: "lead", Spawnable: tc.spawnable}}, Agents: noAgents{}}
		_, _, err := spawnAgent(env, inv, "other")
		var rej *ToolRejectedError
		if !errors.As(err, &rej) || !strings.Contains(rej.Reason, tc.want) {
			t.Errorf("spawnable %v, spawning other: %v, want a refusal with %q", tc.spawnable, err, tc.want)
		}
	}
}
