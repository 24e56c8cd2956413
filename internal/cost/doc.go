// Package cost is the cost model of the AWS deployment (docs/cost.md): for
// a workload described by a few numbers (agents, turns per agent per day,
// tool calls, completions and sleeps per turn, history bytes), it counts
// the requests, GB-seconds and bytes each AWS component bills and prices
// them, per 1,000 turns, per idle agent per month and in total, beside the
// same agents kept waiting in memory on an always-on instance.
//
// Everything here is a pure function of a Workload and a Prices table:
//
//   - prices.go: Prices, the versioned unit-price table (DefaultPrices:
//     one region's on-demand prices, dated, each with the page it came
//     from; prices are the user's to keep current) and LoadPrices, which
//     overlays a JSON file on it.
//   - workload.go: Workload, its defaults and validation (errors name the
//     field), DecodeWorkload for JSON files, and Sources, which records
//     where each input came from.
//   - model.go: Estimate, the arithmetic; PerSlice, the requests one
//     slice makes along the stack's code paths, and CheckStorage, which
//     compares them with what the storage load test counted.
//   - dsql.go: Aurora DSQL's metering formulas as AWS documents them
//     (DPUs from bytes read and written per transaction) and a slice's
//     DPUs, derived from the history figures along the code path.
//   - measured.go: the load tests' results (the storage load test's
//     storage.json, a density benchmark's JSON) read and applied as
//     inputs; a storage result is checked first (CheckStorage).
//   - report.go: Report.Print, every result with its assumptions.
//
// Tests pin the model to the code: internal/stack's TestCostModelMatchesStack
// (memory sizes, log retention, polled queues), loadtest/storage's
// TestCostModelMatchesMeasured (requests per slice on PostgreSQL and
// DynamoDB Local; the estimate for its own workload: requests per turn,
// DSQL rows, bytes and DPUs per commit and slice against internal/dsql's
// Meter), TestCodePathFigures here (dedup TTL),
// TestDSQLFormulasMatchAWSExamples (AWS's billing examples).
//
// Model tokens are left out on purpose: they dominate any agent's bill and
// do not depend on the runtime.
package cost
