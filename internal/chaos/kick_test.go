package chaos_test

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/chaos"
)

// TestDiskRestartKicksThreadsWithUnsentWork: the disk store writes a
// sent-only commit behind (internal/disk, doc.go), so a restart can find a
// thread whose outbox went out still listing it. serve's recovery kicks
// such threads (NeedAttention); the harness does too (Backend.Recover). A
// compaction child that closed right after sending its summary gets no
// other slice, so without the kick it ended with an unsent outbox: every
// crash of compaction_redelivery on the disk store, none sampled away,
// must end clean (it failed at crash #24, before_commit@main, before the
// kicks).
func TestDiskRestartKicksThreadsWithUnsentWork(t *testing.T) {
	if testing.Short() {
		t.Skip("one scenario's every crash on the disk store")
	}
	ctx := context.Background()
	sc := chaos.ScenarioNamed("compaction_redelivery")
	if sc == nil {
		t.Fatal("no compaction_redelivery scenario")
	}
	ref, problems := memoryReference(ctx, sc)
	if ref == nil {
		t.Fatal(problems)
	}
	stores := diskStores(t)
	own, sites, problems, err := chaos.Reference(ctx, sc, stores)
	if err != nil {
		t.Fatal(err)
	}
	if ps := chaos.Compare(ref, own, problems); len(ps) > 0 {
		t.Fatalf("the disk store's crash-free run: %v", ps)
	}
	rep := chaos.NewReport()
	m := &chaos.Matrix{Scenario: sc, Backend: "disk", New: stores, Ref: ref, Sites: sites, Report: rep}
	report(t, m.Crashes(ctx))
}
