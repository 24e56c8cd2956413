package chaos_test

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/chaos"
	"github.com/agentslice/agentslice/internal/runtime"
)

// lyingDedup says every redelivered message was processed: a crash before
// the commit then loses the message.
type lyingDedup struct{ runtime.DedupStore }

func (l lyingDedup) Seen(ctx context.Context, thread string, ids []string) ([]bool, error) {
	out := make([]bool, len(ids))
	for i := range out {
		out[i] = true
	}
	return out, nil
}

// blindStore commits whatever version the thread is at: racing slices
// both commit.
type blindStore struct{ runtime.HistoryStore }

func (b blindStore) Commit(ctx context.Context, c *runtime.Commit) error {
	th, err := b.HistoryStore.Load(ctx, c.ThreadID)
	if err != nil {
		return err
	}
	cc := *c
	cc.Expected = th.State.Version
	cc.State.Version = th.State.Version + 1
	cc.State.Length = th.State.Length + len(c.Append)
	return b.HistoryStore.Commit(ctx, &cc)
}

// The checks have teeth: broken stores make the matrix report divergences.
func TestBrokenStoresDiverge(t *testing.T) {
	ctx := context.Background()
	sc := chaos.ScenarioNamed("tool_call")
	ref, sites, _, err := chaos.Reference(ctx, sc, memory)
	if err != nil {
		t.Fatal(err)
	}
	lying := func() (chaos.Backend, func(), error) {
		b, done, err := memory()
		b.Dedup = lyingDedup{b.Dedup}
		return b, done, err
	}
	blind := func() (chaos.Backend, func(), error) {
		b, done, err := memory()
		b.History = blindStore{b.History}
		return b, done, err
	}
	m := &chaos.Matrix{Scenario: sc, Backend: "lying-dedup", New: lying, Ref: ref, Sites: sites, Report: chaos.NewReport()}
	if d := m.Crashes(ctx); len(d) == 0 {
		t.Error("a dedup store that claims every redelivery was processed went unnoticed")
	} else {
		t.Logf("lying dedup: %d divergences, first:\n%s", len(d), d[0])
	}
	m = &chaos.Matrix{Scenario: sc, Backend: "blind-store", New: blind, Ref: ref, Sites: sites, Report: chaos.NewReport()}
	if d := m.Races(ctx, false); len(d) == 0 {
		t.Error("a history store without version checks went unnoticed by the race runs")
	} else {
		t.Logf("blind store: %d divergences, first:\n%s", len(d), d[0])
	}
}
