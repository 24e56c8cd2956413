package main

import (
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
