package chaos_test

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/chaos"
)

func TestProbe(t *testing.T) {
	ctx := context.Background()
	rep := chaos.NewReport()
	for _, sc := range chaos.Scenarios() {
		ref, sites, problems, err := chaos.Reference(ctx, sc, memory)
		if err != nil || len(problems) > 0 {
			t.Fatalf("%s: %v %v", sc.Name, err, problems)
		}
		t.Logf("%s: %d sites", sc.Name, len(sites))
		m := &chaos.Matrix{Scenario: sc, Backend: "memory", New: memory, Ref: ref, Sites: sites, Report: rep}
		for _, d := range m.Crashes(ctx) {
			t.Errorf("%s", d)
		}
		for _, d := range m.Redeliveries(ctx, []uint64{1, 2, 3}) {
			t.Errorf("%s", d)
		}
		for _, d := range m.Races(ctx) {
			t.Errorf("%s", d)
		}
		for _, d := range m.CrashesWithRedelivery(ctx) {
			t.Errorf("%s", d)
		}
	}
	t.Log(rep.Details())
	t.Log(rep.Line())
}

func TestProbeReal(t *testing.T) {
	ctx := context.Background()
	rep := chaos.NewReport()
	real := realStores(t)
	for _, sc := range chaos.Scenarios()[:2] {
		ref, _, _, err := chaos.Reference(ctx, sc, memory)
		if err != nil {
			t.Fatal(err)
		}
		rref, sites, problems, err := chaos.Reference(ctx, sc, real)
		if err != nil || len(problems) > 0 {
			t.Fatalf("%s: %v %v", sc.Name, err, problems)
		}
		if ref.String() != rref.String() {
			t.Fatalf("differs")
		}
		m := &chaos.Matrix{Scenario: sc, Backend: "dsql", New: real, Ref: ref, Sites: sites, Report: rep}
		for _, d := range m.Crashes(ctx) {
			t.Errorf("%s", d)
		}
		for _, d := range m.Races(ctx) {
			t.Errorf("%s", d)
		}
	}
	t.Log(rep.Details())
	t.Log(rep.Line())
}
