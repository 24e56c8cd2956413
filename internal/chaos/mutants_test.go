//go:build mutants

package chaos_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/chaos"
	"github.com/agentslice/agentslice/internal/runtime"
)

// TestMutant runs the memory matrix of `make chaos` (memorySuite, coverage
// included) against an engine built with one deliberate bug
// (AGENTSLICE_MUTANT, see runtime.Mutants) and passes only if the matrix
// catches it: at least one divergence. It stops at the first. Run by
// scripts/mutants.sh (`make mutants`), once per mutant.
func TestMutant(t *testing.T) {
	m := runtime.ActiveMutant()
	if m == "" {
		t.Skip("AGENTSLICE_MUTANT names no mutant")
	}
	if slices.Contains(runtime.MeaningMutants, m) {
		t.Run("meaning", func(t *testing.T) { meaningCatches(t) })
	}
	rep := chaos.NewReport()
	rep.FailFast()
	t.Run("memory", func(t *testing.T) { memorySuite().quiet().run(t, rep, false) })
	rep.Coverage(chaos.Scenarios())
	ds := rep.Divergences()
	verdict := "survived"
	if len(ds) > 0 {
		verdict = "killed"
	}
	line := fmt.Sprintf("mutant %s: %s after %d runs", m, verdict, rep.Runs())
	if len(ds) > 0 {
		t.Logf("%s; the divergence:\n%s", line, ds[0])
	}
	if path := os.Getenv("AGENTSLICE_MUTANT_RESULT"); path != "" {
		if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}
	if len(ds) == 0 {
		t.Errorf("%s: the matrix did not notice it", line)
	}
}

// meaningCatches plays every scenario crash-free and passes only if the
// end state's checks (invariants, liveness, meaning), without the golden
// snapshots and without a reference to compare with, see the mutant in
// at least one.
func meaningCatches(t *testing.T) {
	ctx := context.Background()
	var caught []string
	for _, sc := range chaos.Scenarios() {
		_, _, problems, err := chaos.Reference(ctx, sc, memory)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) > 0 {
			caught = append(caught, sc.Name+":\n  "+strings.Join(problems[:min(len(problems), 4)], "\n  "))
		}
	}
	if len(caught) == 0 {
		t.Fatalf("mutant %s: no crash-free run's end state shows it (golden snapshots aside)", runtime.ActiveMutant())
	}
	t.Logf("mutant %s: the end state shows it in %d scenarios; the first: %s", runtime.ActiveMutant(), len(caught), caught[0])
}
