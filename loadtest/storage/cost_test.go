package main

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/cost"
	"github.com/agentslice/agentslice/internal/testenv"
)

// TestCostModelMatchesMeasured runs a small load on the real stores and
// checks the cost model's requests per slice (cost.PerSlice, the code
// path's count) against what this driver counts, so the model cannot
// drift from the code. Needs PostgreSQL and DynamoDB Local (testenv).
func TestCostModelMatchesMeasured(t *testing.T) {
	c := config{threads: 40, turns: 2, concurrency: 16, pgConns: 2, out: t.TempDir(),
		dsn:            testenv.Need(t, "AGENTSLICE_TEST_PG_DSN"),
		dynamoEndpoint: testenv.Need(t, "AGENTSLICE_TEST_DYNAMODB_ENDPOINT")}
	res, err := run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	m := cost.StorageMeasured{Threads: res.Threads, Turns: res.Turns, Slices: res.Slices,
		LoadsPerSlice: res.LoadsPerSlice, CommitsPerSlice: res.CommitsPerSlice, SeenPerSlice: res.SeenPerSlice,
		MarksPerSlice: res.MarksPerSlice, PGRoundTripsPerSlice: res.PGRoundTripsPerSlice, DynamoRoundTripsPerSlice: res.DynamoRoundTripsPerSlice}
	if err := cost.CheckStorage(m); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d slices: %.3f SQL round trips, %.3f DynamoDB requests per slice", res.Slices, res.PGRoundTripsPerSlice, res.DynamoRoundTripsPerSlice)
}
