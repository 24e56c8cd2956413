package chaos

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/local"
)

// TestSystemTargetsOutliveRebatching plans the system-crash runs of
// deferred_report from a reference run whose parent got the child's report
// and its close notice in two batches (split: the close notice is held
// until the report's slice began), and plays them as the System batches
// when unhindered (mostly one batch): the batchings differ, and every
// planned crash must still fire, with the end state of the reference. The
// thread's n-th passage through a point was no such address: the
// reference's fourth after_load of main never came in a run that got both
// messages at once.
func TestSystemTargetsOutliveRebatching(t *testing.T) {
	ctx := context.Background()
	var sc *Scenario
	for _, s := range Scenarios() {
		if s.Name == "deferred_report" {
			sc = s
		}
	}
	mem := func() (Backend, func(), error) {
		return Backend{History: local.NewHistoryStore(), Dedup: local.NewDedupStore(time.Hour)}, func() {}, nil
	}
	b, _, _ := mem()
	r := playOnSystem(ctx, sc, b, nil, true)
	ref, problems := r.Snapshot(ctx)
	if len(problems) > 0 {
		t.Fatalf("the split reference run: %v", problems)
	}
	r.f.mu.Lock()
	targets := slices.Clone(r.f.passages)
	r.f.mu.Unlock()
	loads := 0
	for _, tg := range targets {
		if tg.Site == (Site{"after_load", "main"}) {
			loads++
		}
	}
	if loads < 4 {
		t.Fatalf("the split reference run loaded main %d times; want the report and the close notice in slices of their own", loads)
	}
	rep := NewReport()
	m := &Matrix{Scenario: sc, Backend: "memory", New: mem, Ref: ref, Report: rep}
	for _, d := range m.SystemCrashes(ctx, targets) {
		t.Errorf("divergence: %s", d)
	}
	if rep.Runs() != len(targets) {
		t.Errorf("%d runs counted of %d", rep.Runs(), len(targets))
	}
}
