package main

import (
	"testing"
)

// A small run of the whole benchmark, both profiles: every agent finishes
// every turn, nothing is dead-lettered, and the frozen histories reload
// exactly (run verifies them). It asserts behaviour, not speed.
func TestSmallRun(t *testing.T) {
	for _, profile := range []string{"infinity", "unique"} {
		t.Run(profile, func(t *testing.T) {
			c := config{agents: 30, turns: 3, wave: 7, profile: profile, out: t.TempDir(), baselineAgents: -1}
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
	for _, c := range []config{{agents: 0, turns: 1, wave: 1, profile: "infinity"}, {agents: 1, turns: 1, wave: 1, profile: "fast"}} {
		if err := c.validate(); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
}
