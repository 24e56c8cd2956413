package chaos_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/chaos"
)

// suite says which runs to make of which scenarios on which backend.
type suite struct {
	backend   string
	new       chaos.NewBackend
	scenarios []string // nil: all
	exclude   []string // scenarios left out (say why where the suite is built)
	crash     bool
	double    int // depth of the second crash; 0: none
	races     bool
	superset  bool     // SupersetRaces too
	seeds     []uint64 // redelivery runs
	crashDup  bool     // crash + redelivery
	system    bool     // crashes on the embedded System
	held      bool     // crashed batches redelivered with newer mail
	dlq       int      // dead-letter after this many receives; 0: none
	sample    int
	offset    int
	// expectDivergences keeps divergences out of the test's failures (a
	// mutant run wants them).
	expectDivergences bool
}

// quiet returns s with divergences expected.
func (s suite) quiet() suite {
	s.expectDivergences = true
	return s
}

// run plays the suite, one subtest per scenario, into rep. ref gives the
// crash-free reference of a scenario (the memory backend's), which the
// backend's own crash-free run must equal.
func (s suite) run(t *testing.T, rep *chaos.Report, parallel bool) {
	ctx := context.Background()
	for _, sc := range chaos.Scenarios() {
		if (s.scenarios != nil && !slices.Contains(s.scenarios, sc.Name)) || slices.Contains(s.exclude, sc.Name) {
			continue
		}
		t.Run(s.backend+"/"+sc.Name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			// A failed reference is a divergence like any other (counted in
			// the summary); the matrix then runs against what there is.
			var ds []chaos.Divergence
			fail := func(run string, problems []string) {
				if d := rep.Add(sc.Name, "reference/"+s.backend, run, problems); d != nil {
					ds = append(ds, *d)
				}
			}
			ref, problems := memoryReference(ctx, sc)
			if ref == nil {
				fail("memory", problems)
				if !s.expectDivergences {
					report(t, ds)
				}
				return
			}
			fail("memory", problems)
			own, sites, problems, err := chaos.Reference(ctx, sc, s.new)
			if err != nil {
				fail(s.backend, []string{err.Error()})
				if !s.expectDivergences {
					report(t, ds)
				}
				return
			}
			fail(s.backend, chaos.Compare(ref, own, problems))
			m := &chaos.Matrix{Scenario: sc, Backend: s.backend, New: s.new, Ref: ref, Sites: sites, Report: rep, Sample: s.sample, Offset: s.offset}
			if s.crash {
				ds = append(ds, m.Crashes(ctx)...)
			}
			if s.double > 0 {
				ds = append(ds, m.DoubleCrashes(ctx, s.double)...)
			}
			if s.races {
				ds = append(ds, m.Races(ctx, false)...)
				ds = append(ds, m.Races(ctx, true)...)
				if s.superset {
					ds = append(ds, m.SupersetRaces(ctx)...)
				}
			}
			if len(s.seeds) > 0 {
				ds = append(ds, m.Redeliveries(ctx, s.seeds)...)
			}
			if s.crashDup {
				ds = append(ds, m.CrashesWithRedelivery(ctx)...)
			}
			if s.held {
				ds = append(ds, m.HeldCrashes(ctx)...)
			}
			if s.dlq > 0 {
				ds = append(ds, m.DeadLetters(ctx, s.dlq)...)
			}
			if s.system {
				sref, targets, problems, err := chaos.ReferenceOnSystem(ctx, sc, s.new)
				if err != nil {
					problems = []string{err.Error()}
				} else {
					problems = chaos.Compare(ref, sref, problems)
				}
				fail("system", problems)
				ds = append(ds, m.SystemCrashes(ctx, targets)...)
			}
			if !s.expectDivergences {
				report(t, ds)
			}
		})
	}
}

// report fails t with the first divergences.
func report(t *testing.T, ds []chaos.Divergence) {
	t.Helper()
	for i, d := range ds {
		if i == 5 {
			t.Errorf("... and %d more divergences", len(ds)-5)
			break
		}
		t.Errorf("divergence: %s", d)
	}
}

type reference struct {
	snap     *chaos.Snapshot
	problems []string
}

var (
	refMu sync.Mutex
	refs  = map[string]reference{}
)

// memoryReference is the crash-free run of sc on the memory stores, played
// once per test binary, and its problems: the invariants and liveness it
// breaks, and how it differs from the scenario's golden snapshot. The
// snapshot is nil when the run could not be made.
func memoryReference(ctx context.Context, sc *chaos.Scenario) (*chaos.Snapshot, []string) {
	refMu.Lock()
	defer refMu.Unlock()
	if r, ok := refs[sc.Name]; ok {
		return r.snap, r.problems
	}
	ref, _, problems, err := chaos.Reference(ctx, sc, memory)
	if err != nil {
		return nil, []string{err.Error()}
	}
	problems = append(problems, chaos.Golden(sc, ref)...)
	refs[sc.Name] = reference{ref, problems}
	return ref, problems
}

// summarize logs the report and, when AGENTSLICE_CHAOS_SUMMARY names a
// file, writes the summary line there (make chaos prints it last).
func summarize(t *testing.T, rep *chaos.Report) {
	t.Helper()
	for _, d := range rep.Coverage(chaos.Scenarios()) {
		t.Errorf("divergence: %s", d)
	}
	t.Log(rep.Details())
	t.Log(rep.Line())
	if path := os.Getenv("AGENTSLICE_CHAOS_SUMMARY"); path != "" {
		if err := os.WriteFile(path, []byte(rep.Details()+"\n"+rep.Markdown()+"\n"+rep.Line()+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
}
