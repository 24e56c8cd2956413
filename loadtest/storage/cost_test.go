package main

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/cost"
	"github.com/agentslice/agentslice/internal/testenv"
)

// TestCostModelMatchesMeasured runs a small load on the real stores and
// checks the cost model against what this driver measures, so the model
// cannot drift from the code: its requests per slice (cost.PerSlice, the
// code path's count) and its estimate for this workload (requests per
// turn; DSQL rows and bytes per commit, derived from the history bytes;
// DPUs, from AWS's metering formulas) against what the stores were asked
// and what the history store's Meter counted (itself checked against the
// rows PostgreSQL holds, in run). Needs PostgreSQL and DynamoDB Local
// (testenv).
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
		MarksPerSlice: res.MarksPerSlice, PGRoundTripsPerSlice: res.PGRoundTripsPerSlice, DynamoRoundTripsPerSlice: res.DynamoRoundTripsPerSlice,
		DSQL: res.DSQL.DSQLFigures}
	if err := cost.CheckStorage(m); err != nil {
		t.Fatal(err)
	}
	if res.DSQL.CheckedItemRows != int64(c.threads*c.turns*5) {
		t.Errorf("%d item rows checked against PostgreSQL, want %d", res.DSQL.CheckedItemRows, c.threads*c.turns*5)
	}
	est, err := cost.Estimate(cost.StorageWorkload(m), cost.Sources{}, cost.DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d slices: %.3f SQL round trips, %.3f DynamoDB requests per slice; DSQL measured %+v; estimated %+v",
		res.Slices, res.PGRoundTripsPerSlice, res.DynamoRoundTripsPerSlice, res.DSQL, est.DSQL)
}
