package disk

import (
	"context"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
)

func TestAgentStoreConformance(t *testing.T) {
	storetest.RunAgents(t, func(t *testing.T) runtime.AgentStore { return open(t, t.TempDir()).Agents() })
}

// TestAgentVersionsSurviveReopen: kept versions are in the database, not
// only in memory.
func TestAgentVersionsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	d := open(t, dir)
	a := runtime.Agent{Name: "a", Instructions: "A."}
	if err := d.Agents().PutAgents(context.Background(), []runtime.StoredAgent{runtime.NewStoredAgent(a, time.Unix(100, 0))}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := open(t, dir).Agents().LoadAgents(context.Background())
	if err != nil || len(got) != 1 || got[0].Hash != a.Hash() || got[0].Definition.Instructions != "A." || !got[0].Stored.Equal(time.Unix(100, 0)) {
		t.Fatalf("after reopening: %+v, %v", got, err)
	}
}
