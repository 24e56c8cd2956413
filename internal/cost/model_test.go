package cost

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/dedup"
)

// tinyWorkload and roundPrices make every component's figure a number
// computed by hand in TestEstimateTiny.
func tinyWorkload() Workload {
	return Workload{
		Agents: 2, TurnsPerAgentPerDay: 1, ToolCallsPerTurn: 1, ShortSleepsPerTurn: 1, LongSleepsPerTurn: 1,
		HistoryBytesPerTurn: float64(GiB) / 10, HistoryTurns: 10,
		ModelSecondsPerCompletion: 2, SliceOverheadMs: 100, CallbackMs: 40, RelayMs: 80,
		SlicesPerInvocation: 1, MessageKB: 100, ReplyKB: 1, LogBytesPerInvocation: 1000,
		SQLRoundTripsPerSlice: 2, DynamoWritesPerSlice: 2, DynamoReadsPerSlice: 0.5,
		DSQLThreadRowBytes: 100, DSQLThreadIDBytes: 10, DSQLReadBytesPerLoad: 4096, DSQLRowsPerCommit: 4, DSQLWriteBytesPerCommit: 2048,
		DSQLComputeMsPerLoad: 5, DSQLComputeMsPerCommit: 15,
		DedupItemBytes: 1024, DedupTTLDays: DaysPerMonth, IdlePollsPerQueueMonth: 10, PolledQueues: 3,
		ConventionalBytesPerAgent: 1.5 * GiB, InstanceHeadroom: 0.5,
	}
}

func roundPrices() Prices {
	return Prices{Region: "test", Date: "today", Source: "test",
		LambdaGBSecond: 1, LambdaMillionReqs: 1e6, // $1 a GB-second, $1 an invocation
		SQSFIFOMillionReqs: 1e6, SQSStdMillionReqs: 2e6, // $1, $2 a request
		DSQLMillionDPUs: 1e6, DSQLGBMonth: 3,
		DynamoMillionWRUs: 1e6, DynamoMillionRRUs: 1e6, DynamoGBMonth: 1 << 19, DynamoPITRGBMonth: 1 << 19,
		SchedulerMillionInvs: 5e6,
		LogsIngestGB:         float64(GiB) / 1000, LogsStoreGBMonth: float64(GiB) / 1000 * DaysPerMonth / LogRetentionDays,
		Instances: []Instance{{"a", 2, 1}, {"b", 8, 2.5}},
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

func TestEstimateTiny(t *testing.T) {
	r, err := Estimate(tinyWorkload(), Sources{}, roundPrices())
	if err != nil {
		t.Fatal(err)
	}
	// A turn: the user's message, one tool result, one relayed and one
	// scheduled wake-up: 4 slices, one completion each.
	near(t, "slices per turn", r.SlicesPerTurn, 4)
	near(t, "completions per turn", r.CompletionsPerTurn, 4)
	comp := map[string]Component{}
	for _, c := range r.Components {
		comp[c.Name] = c
	}
	unit := func(c, u string) float64 {
		for _, x := range comp[c].Units {
			if x.Name == u {
				return x.PerTurn
			}
		}
		t.Fatalf("%s has no unit %q", c, u)
		return 0
	}
	// Lambda: 0.5 GB x (4 x 2 s + 4 x 0.1 s) + 0.25 GB x 0.04 s + 0.125 GB x 0.08 s
	// = 4.2 + 0.01 + 0.01; invocations 4 slices + 1 callback + 1 relay.
	near(t, "Lambda GB-seconds", unit("Lambda", "GB-seconds"), 4.22)
	near(t, "Lambda invocations", unit("Lambda", "invocations"), 6)
	near(t, "Lambda $", comp["Lambda"].PerTurnUSD, 4.22+6)
	// SQS FIFO: 4 sends of 2 chunks (100 KB) + 4 receives of 2 chunks + 4
	// deletes = 20. Standard: the reply (send, receive: 1 chunk each;
	// delete) 3 + the short sleep through the delay queue (2+2+1) 5 = 8.
	near(t, "SQS FIFO", unit("SQS", "FIFO requests"), 20)
	near(t, "SQS standard", unit("SQS", "standard requests"), 8)
	near(t, "SQS $", comp["SQS"].PerTurnUSD, 20*1+8*2)
	// Polling: 10 receives on each of 2 FIFO and 1 standard queue.
	near(t, "SQS fixed $", comp["SQS"].FixedMonthUSD, 10*1+10*1+10*2)
	// DSQL, per slice: a load of 4,096 B; a commit of 4 rows of 512 B
	// (2,048 B billed, over the 1,024 B minimum) that reads the 100 B
	// thread row (billed as the 2,048 B minimum); 20 ms of compute. 1 GiB
	// of history per agent.
	dpus := 4096*DSQLReadDPUPerByte + 2048*DSQLWriteDPUPerByte + 2048*DSQLReadDPUPerByte + 0.020
	near(t, "DSQL DPUs", unit("Aurora DSQL", "DPUs"), 4*dpus)
	near(t, "DSQL $", comp["Aurora DSQL"].PerTurnUSD, 4*dpus)
	near(t, "DSQL bytes read", unit("Aurora DSQL", "bytes read"), 4*4096)
	near(t, "DSQL $/agent-month", comp["Aurora DSQL"].PerAgentMonthUSD, 3)
	// DynamoDB: 8 writes, 2 reads; 8 KiB kept one month = 8/2^20 GB-months
	// at 2^20 $/GB-month (storage + PITR).
	near(t, "DynamoDB writes", unit("DynamoDB", "write units"), 8)
	near(t, "DynamoDB reads", unit("DynamoDB", "read units"), 2)
	near(t, "DynamoDB $", comp["DynamoDB"].PerTurnUSD, 8+2+8)
	near(t, "Scheduler $", comp["EventBridge Scheduler"].PerTurnUSD, 5)
	// Logs: 6 invocations x 1000 B, ingested and kept 30 days.
	near(t, "Logs $", comp["CloudWatch Logs"].PerTurnUSD, 6+6)

	perTurn := 10.22 + 36 + 4*dpus + 18 + 5 + 12
	near(t, "per turn", r.PerTurnUSD, perTurn)
	near(t, "per 1,000 turns", r.PerThousandTurnsUSD, 1000*perTurn)
	near(t, "idle agent per month", r.IdleAgentMonthUSD, 3)
	near(t, "fixed per month", r.FixedMonthUSD, 40)
	near(t, "total per month", r.TotalMonthUSD, 2*DaysPerMonth*perTurn+2*3+40)
	// Always on: 3 GiB needed; a (1 GiB usable) x 3 = $2,190; b (4 GiB
	// usable) x 1 = $1,825, the cheapest.
	near(t, "needed", r.MemoryNeededBytes, 3*GiB)
	if r.AlwaysOn[0].Count != 3 || r.AlwaysOn[1].Count != 1 || r.Cheapest.Name != "b" {
		t.Fatalf("always on = %+v, cheapest %s; want 3 x a, 1 x b, b", r.AlwaysOn, r.Cheapest.Name)
	}
	near(t, "cheapest $", r.Cheapest.MonthlyUSD, 2.5*730)
	near(t, "break-even", r.BreakEvenTurnsPerDay, (1825-40-6)/(2*perTurn*DaysPerMonth))
}

// AWS's own billing examples (dsql.go's page): each DPU figure it
// prints, from the bytes it states.
func TestDSQLFormulasMatchAWSExamples(t *testing.T) {
	round := func(v float64, digits int) float64 { p := math.Pow(10, float64(digits)); return math.Round(v*p) / p }
	for _, c := range []struct {
		name      string
		got, want float64
		digits    int
	}{
		{"point lookup, 5 rows of 100 B: the 2,048 B minimum", DSQLReadDPU(500), 0.00375, 5},
		{"range scan of 100 rows of 100 B", DSQLReadDPU(10000), 0.01831, 5},
		{"one 100 B row: 128 B per row, 1,024 B per transaction", DSQLWriteDPU([]int{100}), 0.05, 5},
		{"100 rows of 100 B: 12,800 B", DSQLWriteDPU(make100(100)), 0.625, 3},
		{"no rows", DSQLWriteDPU(nil), 0, 5},
	} {
		if got := round(c.got, c.digits); got != c.want {
			t.Errorf("%s: %v DPU, AWS's example says %v", c.name, c.got, c.want)
		}
	}
	// The mean form used by Estimate agrees with the per-row form when
	// rows are alike.
	near(t, "mean write", dsqlWriteDPUMean(100, 100*100), DSQLWriteDPU(make100(100)))
	near(t, "mean write, one row", dsqlWriteDPUMean(1, 100), DSQLWriteDPU([]int{100}))
}

func make100(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = 100
	}
	return r
}

// With the DSQL byte fields at 0, the model derives a slice's reads and
// writes from the history figures along the code path.
func TestDSQLDerived(t *testing.T) {
	w := tinyWorkload()
	w.DSQLReadBytesPerLoad, w.DSQLRowsPerCommit, w.DSQLWriteBytesPerCommit = 0, 0, 0
	w.HistoryBytesPerTurn, w.HistoryTurns = 1000, 3
	r, err := Estimate(w, Sources{}, roundPrices())
	if err != nil {
		t.Fatal(err)
	}
	// A turn: 4 slices, 4 completions; items: the user's, 4 replies, a
	// call and a result for the tool and each sleep: 11, each with 10 B
	// of thread ID and 14 B of fixed columns.
	d := r.DSQL
	near(t, "read bytes per load", d.ReadBytesPerLoad, 100+3*1000+3*11*24)
	near(t, "rows per commit", d.RowsPerCommit, 1+11.0/4)
	near(t, "write bytes per commit", d.WriteBytesPerCommit, 100+(1000+11*24)/4.0)
	near(t, "commit write DPU", d.CommitWrite, 1024*DSQLWriteDPUPerByte) // 416 B in 3.75 rows: 480 B billed, under the minimum
}

func TestEstimateCompletionsAndBatches(t *testing.T) {
	w := tinyWorkload()
	w.CompletionsPerTurn = 1 // the sleeps' wake-ups and the tool result end without a completion
	w.SlicesPerInvocation = 2
	w.ToolCallsPerTurn, w.ShortSleepsPerTurn, w.LongSleepsPerTurn = 1, 0, 0
	r, err := Estimate(w, Sources{}, roundPrices())
	if err != nil {
		t.Fatal(err)
	}
	// 2 slices in 1 invocation: 0.5 x (1 x 2 + 2 x 0.1) + 0.25 x 0.04.
	near(t, "GB-seconds", r.Components[0].Units[0].PerTurn, 1.1+0.01)
	near(t, "invocations", r.Components[0].Units[1].PerTurn, 1+1)
	// FIFO: 2 sends x 2 chunks + 1 receive of 200 KB (4 chunks) + 1 delete.
	near(t, "FIFO", r.Components[1].Units[0].PerTurn, 4+4+1)
}

func TestBreakEvenEdges(t *testing.T) {
	w := tinyWorkload()
	p := roundPrices()
	p.Instances = []Instance{{"free", 64, 0}}
	r, err := Estimate(w, Sources{}, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.BreakEvenTurnsPerDay != 0 {
		t.Errorf("free instances: break-even %v, want 0 (serverless dearer at any rate)", r.BreakEvenTurnsPerDay)
	}
	zero := Prices{Region: "x", Instances: []Instance{{"a", 1, 1}}}
	w.IdlePollsPerQueueMonth, w.HistoryTurns = 0, 0
	r, err = Estimate(w, Sources{}, zero)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(r.BreakEvenTurnsPerDay, 1) {
		t.Errorf("free serverless: break-even %v, want +Inf", r.BreakEvenTurnsPerDay)
	}
}

func TestEstimateRejectsBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Workload, *Prices)
		want string
	}{
		{"no agents", func(w *Workload, _ *Prices) { w.Agents = 0 }, "agents: 0"},
		{"fractional agents", func(w *Workload, _ *Prices) { w.Agents = 1.5 }, "agents: 1.5 is not a whole number"},
		{"negative turns", func(w *Workload, _ *Prices) { w.TurnsPerAgentPerDay = -1 }, "turns_per_agent_per_day: -1 is below 0"},
		{"NaN", func(w *Workload, _ *Prices) { w.ModelSecondsPerCompletion = math.NaN() }, "model_seconds_per_completion: NaN is not a number"},
		{"batch of 0.5", func(w *Workload, _ *Prices) { w.SlicesPerInvocation = 0.5 }, "slices_per_invocation: 0.5 is below 1"},
		{"half a completion", func(w *Workload, _ *Prices) { w.CompletionsPerTurn = 0.5 }, "completions_per_turn: 0.5 is below 1"},
		{"no memory left", func(w *Workload, _ *Prices) { w.InstanceHeadroom = 1 }, "instance_headroom: 1 leaves no memory"},
		{"negative price", func(_ *Workload, p *Prices) { p.DSQLGBMonth = -0.1 }, "dsql_gb_month: -0.1 is not a price"},
		{"no instances", func(_ *Workload, p *Prices) { p.Instances = nil }, "instances: the always-on comparison needs"},
		{"instance without memory", func(_ *Workload, p *Prices) { p.Instances[1].MemoryGiB = 0 }, "instances[1].memory_gib: 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, p := tinyWorkload(), roundPrices()
			c.edit(&w, &p)
			_, err := Estimate(w, Sources{}, p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Estimate: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestDefaultsEstimate(t *testing.T) {
	w := DefaultWorkload()
	r, err := Estimate(w, DefaultSources(&w), DefaultPrices())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r.Print(&b)
	out := b.String()
	for _, want := range []string{"per 1,000 turns", "per idle agent per month", "model tokens left out", "NOT CONFIRMED",
		PricesNote, "recorded 2026-12-01", "default (assumption)", "break-even"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The figures the model takes from the code: pinned against the code.
func TestCodePathFigures(t *testing.T) {
	if got := time.Duration(DefaultDedupTTLDays) * 24 * time.Hour; got != dedup.DefaultTTL {
		t.Errorf("DefaultDedupTTLDays = %v, dedup.DefaultTTL is %v", got, dedup.DefaultTTL)
	}
	if err := CheckStorage(recorded40()); err != nil {
		t.Fatal(err)
	}
}

// recorded40 is a storage load test's result (TestCostModelMatchesMeasured's
// run, 40 threads x 2 turns on PostgreSQL and DynamoDB Local, 2026-12-02).
func recorded40() StorageMeasured {
	return StorageMeasured{Threads: 40, Turns: 2, Slices: 160, LoadsPerSlice: 1, CommitsPerSlice: 1,
		MarksPerSlice: 1, PGRoundTripsPerSlice: 2.044, DynamoRoundTripsPerSlice: 2,
		DSQL: StorageDSQL{ReadBytesPerLoad: 1224.04375, RowsPerCommit: 3.75, WriteBytesPerCommit: 1028.75625,
			ThreadRowBytes: 399.125, ThreadIDBytes: 6.75, ItemBodyBytesPerTurn: 1152.1375, IODPUsPerSlice: 0.06057460234375}}
}

func TestCheckStorageNamesTheDifference(t *testing.T) {
	base := recorded40()
	base.Threads, base.Slices, base.PGRoundTripsPerSlice = 200, 800, 2.08
	if err := CheckStorage(base); err != nil {
		t.Fatalf("200 threads' connection setup (2.08 round trips) is within 5%%: %v", err)
	}
	for _, c := range []struct {
		edit func(*StorageMeasured)
		want string
	}{
		{func(m *StorageMeasured) { m.CommitsPerSlice = 2 }, "commits per slice: measured 2.000, the model counts 1.000"},
		{func(m *StorageMeasured) { m.SeenPerSlice = 1 }, "dedup reads per slice"},
		{func(m *StorageMeasured) { m.DynamoRoundTripsPerSlice = 3 }, "DynamoDB requests per slice: measured 3.000"},
		{func(m *StorageMeasured) { m.PGRoundTripsPerSlice = 3 }, "SQL round trips per slice: measured 3.000"},
		{func(m *StorageMeasured) { m.Slices = 0 }, "counts no slices"},
		{func(m *StorageMeasured) { m.DSQL.RowsPerCommit = 4.75 }, "DSQL rows per commit: the estimate has 3.75, the load test measured 4.75"},
		{func(m *StorageMeasured) { m.DSQL.WriteBytesPerCommit *= 1.1 }, "DSQL bytes per commit"},
		{func(m *StorageMeasured) { m.DSQL.IODPUsPerSlice *= 1.2 }, "DSQL DPUs per slice besides compute"},
		{func(m *StorageMeasured) { m.DSQL = StorageDSQL{} }, "no DSQL figures"},
	} {
		m := base
		c.edit(&m)
		if err := CheckStorage(m); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckStorage: %v, want %q", err, c.want)
		}
	}
}

func TestUSD(t *testing.T) {
	for v, want := range map[float64]string{0: "$0", 1234.4: "$1234", 12.345: "$12.35", 0.0777: "$0.0777", 0.00176: "$0.00176", 1.76e-05: "$0.0000176"} {
		if got := usd(v); got != want {
			t.Errorf("usd(%v) = %q, want %q", v, got, want)
		}
	}
}
