package main

import (
	"strings"
	"testing"
)

// A small run of the whole benchmark, both profiles (and the unique one on
// the sqlite store): every agent finishes
// every turn, nothing is dead-lettered, and the frozen histories reload
// exactly (run verifies them). It asserts behaviour, not speed.
func TestSmallRun(t *testing.T) {
	for _, tc := range []struct{ profile, store string }{{"infinity", "memory"}, {"unique", "memory"}, {"unique", "sqlite"}} {
		t.Run(tc.profile+"/"+tc.store, func(t *testing.T) {
			c := config{agents: 30, turns: 3, wave: 7, profile: tc.profile, store: tc.store, data: t.TempDir(), out: t.TempDir(), baselineAgents: -1}
			if err := c.validate(); err != nil {
				t.Fatal(err)
			}
			if err := run(c); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConfigRejectsNonsense(t *testing.T) {
	for _, c := range []config{{agents: 0, turns: 1, wave: 1, profile: "infinity"}, {agents: 1, turns: 1, wave: 1, profile: "fast"},
		{agents: 1, turns: 1, wave: 1, profile: "unique", store: "redis"}} {
		if err := c.validate(); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
}

// TestNiceTicks: chart ticks are round numbers covering the data.
func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		hi   float64
		n    int
		top  float64
		step float64
	}{{80000, 5, 80000, 20000}, {73, 4, 80, 20}, {1234, 4, 1500, 500}, {0.7, 4, 0.8, 0.2}} {
		ticks, top := niceTicks(c.hi, c.n)
		if top != c.top || ticks[0] != 0 || ticks[len(ticks)-1] < c.hi || ticks[1]-ticks[0] != c.step {
			t.Errorf("niceTicks(%v, %d) = %v, %v", c.hi, c.n, ticks, top)
		}
	}
}

// TestChartLegend: the chart names the axes and says which lines are
// measured, published or extrapolated, each with a line sample.
func TestChartLegend(t *testing.T) {
	r := &Result{Profile: "infinity", Agents: 80000, Turns: 20, RSSBytes: 2e9, BaselineRSSBytes: 1e7, BytesPerIdleAgent: 20000,
		ConventionalBytesPerAgt: 300000, ConventionalAgents: 10000}
	svg := chart(r, []sample{{40000, 1e9}, {80000, 2e9}})
	for _, want := range []string{"resident memory (MB)", "idle agents", "measured here", "published", "measured at 10000 agents, extrapolated", `stroke-dasharray="2,3"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}
