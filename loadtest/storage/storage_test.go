package main

import (
	"context"
	"os"
	"testing"

	"github.com/agentslice/agentslice/internal/testenv"
)

// A small run of the whole driver on the real stores: every thread plays
// every turn, nothing is dead-lettered, every history reads back exactly.
// It asserts behaviour and that the counters count, not speed.
func TestSmallRun(t *testing.T) {
	c := config{threads: 60, turns: 2, concurrency: 16, pgConns: 4, out: t.TempDir(),
		dsn:            testenv.Need(t, "AGENTSLICE_TEST_PG_DSN"),
		dynamoEndpoint: testenv.Need(t, "AGENTSLICE_TEST_DYNAMODB_ENDPOINT")}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verified != c.threads || res.Slices != int64(c.threads*c.turns*2) {
		t.Fatalf("verified %d threads, %d slices: %+v", res.Verified, res.Slices, res)
	}
	if res.PGRoundTripsPerSlice < 1 || res.DynamoRoundTripsPerSlice <= 0 || res.LoadsPerSlice < 1 {
		t.Fatalf("round trips were not counted: %+v", res)
	}
	res.print(os.Stdout)
}

func TestConfigRejectsNonsense(t *testing.T) {
	for _, c := range []config{{threads: 0, turns: 1, concurrency: 1, pgConns: 1, dsn: "x", dynamoEndpoint: "y"},
		{threads: 1, turns: 1, concurrency: 1, pgConns: 1, dynamoEndpoint: "y"}} {
		if err := c.validate(); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
}
