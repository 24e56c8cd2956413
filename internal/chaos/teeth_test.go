package chaos_test

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/chaos"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The stores below are broken on purpose, each in a way that breaks one
// promise of the slice contract. The matrix must notice every one: these
// tests are what shows that zero divergences means something.

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

// blindStore commits at whatever version the thread is at: racing slices
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

// outboxlessStore forgets the outbox it is given: what a slice must send
// after its commit is lost when it dies before sending (no outbox pattern).
type outboxlessStore struct{ runtime.HistoryStore }

func (o outboxlessStore) Commit(ctx context.Context, c *runtime.Commit) error {
	cc := *c
	cc.State = c.State.Clone()
	cc.State.Outbox = nil
	return o.HistoryStore.Commit(ctx, &cc)
}

// eagerStore records a pending call as dispatched before it was sent
// (dispatch after record, without the flag): a slice that dies in between
// leaves the thread waiting for a call nobody sent.
type eagerStore struct{ runtime.HistoryStore }

func (e eagerStore) Commit(ctx context.Context, c *runtime.Commit) error {
	cc := *c
	cc.State = c.State.Clone()
	if cc.State.Pending != nil {
		cc.State.Pending.Dispatched = true
	}
	return e.HistoryStore.Commit(ctx, &cc)
}

// undyingTimers are the embedded timers with a Cancel that disarms
// nothing: an interrupted sleep's wake-up still fires.
type undyingTimers struct{ *local.Timers }

func (undyingTimers) Cancel(ctx context.Context, thread, call string) error { return nil }

// forgetfulTimers accept every timer and arm none: a sleep never wakes.
type forgetfulTimers struct{ *local.Timers }

func (forgetfulTimers) Schedule(ctx context.Context, tm runtime.Timer) error { return nil }

func TestChecksCatchBrokenStores(t *testing.T) {
	ctx := context.Background()
	wrap := func(f func(b *chaos.Backend)) chaos.NewBackend {
		return func() (chaos.Backend, func(), error) {
			b, done, err := memory()
			f(&b)
			return b, done, err
		}
	}
	tests := []struct {
		name     string
		scenario string
		new      chaos.NewBackend
		mode     func(m *chaos.Matrix) []chaos.Divergence
	}{
		{"dedup store that claims every redelivery was processed", "tool_call",
			wrap(func(b *chaos.Backend) { b.Dedup = lyingDedup{b.Dedup} }),
			func(m *chaos.Matrix) []chaos.Divergence { return m.Crashes(ctx) }},
		{"history store without version checks", "tool_call",
			wrap(func(b *chaos.Backend) { b.History = blindStore{b.History} }),
			func(m *chaos.Matrix) []chaos.Divergence { return m.Races(ctx, false) }},
		{"history store that drops the outbox", "spawn_report",
			wrap(func(b *chaos.Backend) { b.History = outboxlessStore{b.History} }),
			func(m *chaos.Matrix) []chaos.Divergence { return m.Crashes(ctx) }},
		{"history store that marks calls dispatched before they are sent", "tool_call",
			wrap(func(b *chaos.Backend) { b.History = eagerStore{b.History} }),
			func(m *chaos.Matrix) []chaos.Divergence { return m.Crashes(ctx) }},
		{"timers whose cancel disarms nothing", "interrupted_sleep",
			wrap(func(b *chaos.Backend) {
				b.Timers = func(q runtime.Queue, c local.Clock) runtime.Timers { return undyingTimers{local.NewTimersOn(q, c)} }
			}),
			func(m *chaos.Matrix) []chaos.Divergence { return m.Crashes(ctx) }},
		{"timers that never fire", "sleep",
			wrap(func(b *chaos.Backend) {
				b.Timers = func(q runtime.Queue, c local.Clock) runtime.Timers { return forgetfulTimers{local.NewTimersOn(q, c)} }
			}),
			func(m *chaos.Matrix) []chaos.Divergence { return m.Crashes(ctx) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := chaos.ScenarioNamed(tc.scenario)
			ref, sites, _, err := chaos.Reference(ctx, sc, memory)
			if err != nil {
				t.Fatal(err)
			}
			m := &chaos.Matrix{Scenario: sc, Backend: "broken", New: tc.new, Ref: ref, Sites: sites, Report: chaos.NewReport()}
			ds := tc.mode(m)
			if len(ds) == 0 {
				t.Fatal("the matrix reported no divergence")
			}
			t.Logf("%d of %d runs diverged; the first:\n%s", len(ds), len(sites), ds[0])
		})
	}
}
