package chaos_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/agentslice/agentslice/internal/chaos"
)

// repeatEnv sets how many times TestSystemCrashesFire plays its matrix.
const repeatEnv = "AGENTSLICE_CHAOS_SYSTEM_REPEAT"

// TestSystemCrashesFire plays the system-crash mode of the scenarios whose
// batches on the embedded System depend most on goroutine timing (a
// child's report and its close notice reach the parent in one batch or in
// two; a grandchild's report races its parent's own slices), on the memory
// and the disk stores, and fails on any run whose planned crash did not
// fire (or that diverged). Each round takes a new reference run, so its
// targets come from whichever batching that run had. AGENTSLICE_CHAOS_SYSTEM_REPEAT
// sets the rounds (default 1); run it under load to shake the timing.
func TestSystemCrashesFire(t *testing.T) {
	rounds := 1
	if v := os.Getenv(repeatEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", repeatEnv, v)
		}
		rounds = n
	}
	ctx := context.Background()
	backends := []struct {
		name string
		new  chaos.NewBackend
	}{{"memory", memory}, {"disk", diskStores(t)}}
	for _, b := range backends {
		for _, sc := range chaos.Scenarios() {
			if sc.Name != "deferred_report" && sc.Name != "grandchild_event" {
				continue
			}
			t.Run(b.name+"/"+sc.Name, func(t *testing.T) {
				ref, problems := memoryReference(ctx, sc)
				if ref == nil || len(problems) > 0 {
					t.Fatalf("reference: %v", problems)
				}
				rep := chaos.NewReport()
				var runs int
				for range rounds {
					sref, targets, problems, err := chaos.ReferenceOnSystem(ctx, sc, b.new)
					if err != nil {
						t.Fatal(err)
					}
					if problems = chaos.Compare(ref, sref, problems); len(problems) > 0 {
						t.Fatalf("the System's reference run: %v", problems)
					}
					m := &chaos.Matrix{Scenario: sc, Backend: b.name, New: b.new, Ref: ref, Report: rep}
					report(t, m.SystemCrashes(ctx, targets))
					runs += len(targets)
				}
				if got := rep.Runs(); got != runs {
					t.Errorf("%d runs counted of %d", got, runs)
				}
				t.Logf("%d system-crash runs, %d divergences", runs, len(rep.Divergences()))
			})
		}
	}
}
