package cost

import (
	"fmt"
	"math"
	"strings"
)

// Calendar and memory units.
const (
	HoursPerMonth = 730.0
	DaysPerMonth  = HoursPerMonth / 24
	GiB           = 1 << 30
	chunkKB       = 64 // SQS bills each 64 KB of a request's payload as one request
)

// Function memory sizes (internal/stack/stack.go; a stack test pins them).
const (
	SliceMemoryMB    = 512
	ReceiverMemoryMB = 256
	RelayMemoryMB    = 128
	// LogRetentionDays is the functions' log groups' retention.
	LogRetentionDays = 30
)

// SliceRequests is what one slice asks of the stores along the runtime's
// code path (internal/runtime's engine over internal/dsql and
// internal/dedup): one load and one commit of the thread (one SQL round
// trip each), one conditional put per consumed message ID plus one
// "outbox sent" mark (internal/runtime/engine.go: the dedup write after a
// slice that sent its outbox; a slice that sent nothing marks only its
// inputs), no dedup read on a first delivery.
type SliceRequests struct {
	Loads, Commits, DedupReads, DedupWrites  float64
	SQLRoundTrips, DynamoWrites, DynamoReads float64
}

// PerSlice returns the requests of a slice consuming messages messages on
// first delivery.
func PerSlice(messages int) SliceRequests {
	r := SliceRequests{Loads: 1, Commits: 1, DedupReads: 0, DedupWrites: 1}
	r.SQLRoundTrips = r.Loads + r.Commits
	r.DynamoWrites = float64(messages) + 1
	r.DynamoReads = 0
	return r
}

// StorageMeasured is the part of the storage load test's result
// (loadtest/storage, storage.json) the model is checked against. Each of
// its slices consumes one message (a user message or a tool result).
type StorageMeasured struct {
	Threads, Turns              int
	Slices                      int64
	LoadsPerSlice               float64
	CommitsPerSlice             float64
	SeenPerSlice, MarksPerSlice float64
	PGRoundTripsPerSlice        float64
	DynamoRoundTripsPerSlice    float64
	DSQL                        StorageDSQL
}

// StorageDSQL is what the storage load test's history store read and wrote
// (internal/dsql's Meter, checked there against the rows PostgreSQL
// stores): means per load and per commit, and the DPUs besides compute
// that AWS's formulas give transaction by transaction, per slice.
type StorageDSQL struct {
	ReadBytesPerLoad, RowsPerCommit, WriteBytesPerCommit float64
	ThreadRowBytes, ThreadIDBytes                        float64
	ItemBodyBytesPerTurn                                 float64
	IODPUsPerSlice                                       float64
}

// StorageWorkload is the storage load test's own workload as the model
// sees it: a thread per agent, each turn a user message, one tool call and
// two completions (two slices), with the history bytes, thread rows and
// IDs it measured. A load there reads a thread still growing, so its
// measured read bytes stand in for the model's whole-history bound.
func StorageWorkload(m StorageMeasured) Workload {
	w := DefaultWorkload()
	w.Agents, w.TurnsPerAgentPerDay = float64(max(m.Threads, 1)), float64(max(m.Turns, 1))
	w.ToolCallsPerTurn, w.CompletionsPerTurn = 1, 2
	w.ShortSleepsPerTurn, w.LongSleepsPerTurn = 0, 0
	w.HistoryBytesPerTurn, w.HistoryTurns = m.DSQL.ItemBodyBytesPerTurn, float64(m.Turns)
	w.DSQLThreadRowBytes, w.DSQLThreadIDBytes = m.DSQL.ThreadRowBytes, m.DSQL.ThreadIDBytes
	w.DSQLReadBytesPerLoad = m.DSQL.ReadBytesPerLoad
	return w
}

// CheckStorage compares PerSlice(1) with what the storage load test
// counted and names every figure that differs: store calls by more than
// 0.01 per slice, network round trips by more than 5% (the pool's
// connection setup is counted too, spread over the run's slices; at 200
// threads it is about 0.08 round trips per slice). A difference means the
// model no longer describes the code.
func CheckStorage(m StorageMeasured) error {
	if m.Slices == 0 {
		return fmt.Errorf("cost: the storage result counts no slices")
	}
	want := PerSlice(1)
	var bad []string
	check := func(name string, got, want float64) {
		tol := 0.01
		if strings.Contains(name, "round trips") || strings.Contains(name, "requests") {
			tol = 0.05 * want
		}
		if math.Abs(got-want) > tol {
			bad = append(bad, fmt.Sprintf("%s: measured %.3f, the model counts %.3f", name, got, want))
		}
	}
	check("loads per slice", m.LoadsPerSlice, want.Loads)
	check("commits per slice", m.CommitsPerSlice, want.Commits)
	check("dedup reads per slice", m.SeenPerSlice, want.DedupReads)
	check("dedup writes (calls) per slice", m.MarksPerSlice, want.DedupWrites)
	check("SQL round trips per slice", m.PGRoundTripsPerSlice, want.SQLRoundTrips)
	check("DynamoDB requests per slice", m.DynamoRoundTripsPerSlice, want.DynamoWrites+want.DynamoReads)
	bad = append(bad, checkEstimate(m)...)
	if len(bad) > 0 {
		return fmt.Errorf("cost: the model disagrees with the storage load test (%d slices): %s", m.Slices, strings.Join(bad, "; "))
	}
	return nil
}

// checkEstimate prices the storage load test's own workload
// (StorageWorkload) and compares the estimate's figures per turn with
// what the test measured: requests, the rows and bytes each commit
// writes (derived by the model from the history bytes along the code
// path), and the DPUs. Each thread's first commit also writes its
// threads_parent_idx entry, a row the model leaves out (one per thread's
// life); the comparison adds it back. The model applies DSQL's per-row
// and per-transaction minimums to mean commits, the test to each one:
// DPUs agree within 8%.
func checkEstimate(m StorageMeasured) []string {
	d := m.DSQL
	if d.IODPUsPerSlice <= 0 || d.RowsPerCommit <= 0 {
		return []string{"the result has no DSQL figures (DSQL.IODPUsPerSlice, DSQL.RowsPerCommit): run the storage load test again"}
	}
	r, err := Estimate(StorageWorkload(m), Sources{}, DefaultPrices())
	if err != nil {
		return []string{"pricing the load test's workload: " + err.Error()}
	}
	var bad []string
	within := func(name string, got, want, tol float64) {
		if math.Abs(got-want) > tol*math.Abs(want) {
			bad = append(bad, fmt.Sprintf("%s: the estimate has %.4g, the load test measured %.4g", name, got, want))
		}
	}
	unit := func(component, name string) float64 {
		for _, c := range r.Components {
			if c.Name == component {
				for _, u := range c.Units {
					if u.Name == name {
						return u.PerTurn
					}
				}
			}
		}
		return math.NaN()
	}
	slices := r.SlicesPerTurn
	within("SQL round trips per turn", unit("Aurora DSQL", "SQL round trips"), slices*m.PGRoundTripsPerSlice, 0.05)
	within("DynamoDB writes per turn", unit("DynamoDB", "write units"), slices*(m.DynamoRoundTripsPerSlice-m.SeenPerSlice), 0.05)
	created := float64(m.Threads) / float64(m.Slices)
	within("DSQL rows per commit", r.DSQL.RowsPerCommit+created, d.RowsPerCommit, 0.005)
	within("DSQL bytes per commit", r.DSQL.WriteBytesPerCommit+created*d.ThreadIDBytes, d.WriteBytesPerCommit, 0.005)
	within("DSQL DPUs per slice besides compute", r.DSQL.IO(), d.IODPUsPerSlice, 0.08)
	return bad
}

// Unit is one billed quantity of a component, per turn.
type Unit struct {
	Name    string
	PerTurn float64
}

// Component is one AWS service's share: per turn, per agent per month
// whatever the agent does (storage), and per month for the deployment.
type Component struct {
	Name             string
	Units            []Unit
	PerTurnUSD       float64
	PerAgentMonthUSD float64
	FixedMonthUSD    float64
	Note             string
}

// InstanceCost is the always-on comparison for one instance size.
type InstanceCost struct {
	Instance
	Count      int
	MonthlyUSD float64
}

// Report is an estimate with its inputs.
type Report struct {
	Workload Workload
	Sources  Sources
	Prices   Prices

	SlicesPerTurn, CompletionsPerTurn float64
	TurnsPerMonth                     float64
	// DSQL is one slice's DPUs on Aurora DSQL.
	DSQL       DSQLSlice
	Components []Component

	PerTurnUSD, PerThousandTurnsUSD float64
	IdleAgentMonthUSD               float64
	FixedMonthUSD                   float64
	TotalMonthUSD                   float64

	// The always-on comparison: every instance of the table, and the
	// cheapest that holds the agents.
	MemoryNeededBytes float64
	AlwaysOn          []InstanceCost
	Cheapest          InstanceCost
	// BreakEvenTurnsPerDay is the turns per agent per day at which the
	// serverless deployment costs what Cheapest costs; +Inf when no rate
	// of turns makes it dearer, 0 when it is dearer at any rate (its
	// fixed and idle costs alone exceed the instances').
	BreakEvenTurnsPerDay float64
}

func chunks(kb float64) float64 { return math.Max(1, math.Ceil(kb/chunkKB)) }

// Estimate prices w with p. It is a pure function: the same inputs give
// the same report.
func Estimate(w Workload, src Sources, p Prices) (Report, error) {
	if w.Agents == 0 {
		return Report{}, errNoAgents
	}
	if err := w.Validate(); err != nil {
		return Report{}, fmt.Errorf("cost: workload: %w", err)
	}
	if err := p.Validate(); err != nil {
		return Report{}, fmt.Errorf("cost: prices: %w", err)
	}
	r := Report{Workload: w, Sources: src, Prices: p}
	slices := 1 + w.ToolCallsPerTurn + w.ShortSleepsPerTurn + w.LongSleepsPerTurn
	completions := w.CompletionsPerTurn
	if completions == 0 {
		completions = slices
	}
	r.SlicesPerTurn, r.CompletionsPerTurn = slices, completions
	r.TurnsPerMonth = w.Agents * w.TurnsPerAgentPerDay * DaysPerMonth
	million := func(n, price float64) float64 { return n / 1e6 * price }

	// Lambda: the slice function waits for its completions (billed), the
	// receiver takes each tool result, the relay each short sleep.
	sliceInv := slices / w.SlicesPerInvocation
	gbs := SliceMemoryMB/1024.0*(completions*w.ModelSecondsPerCompletion+slices*w.SliceOverheadMs/1000) +
		ReceiverMemoryMB/1024.0*w.ToolCallsPerTurn*w.CallbackMs/1000 +
		RelayMemoryMB/1024.0*w.ShortSleepsPerTurn*w.RelayMs/1000
	invocations := sliceInv + w.ToolCallsPerTurn + w.ShortSleepsPerTurn
	lambda := Component{Name: "Lambda", Units: []Unit{{"GB-seconds", gbs}, {"invocations", invocations}},
		PerTurnUSD: gbs*p.LambdaGBSecond + million(invocations, p.LambdaMillionReqs)}

	// SQS: every message into the FIFO input queue (user, tool results,
	// wake-ups) is sent once and received and deleted by the event source
	// in batches of SlicesPerInvocation; a reply goes to the standard
	// output queue and is received and deleted by its reader; a short
	// sleep passes through the standard delay queue. Empty queues are
	// polled whatever the agents do: a fixed cost.
	fifo := slices*chunks(w.MessageKB) + sliceInv*(chunks(w.MessageKB*w.SlicesPerInvocation)+1)
	std := 2*chunks(w.ReplyKB) + 1 + w.ShortSleepsPerTurn*(2*chunks(w.MessageKB)+1)
	fifoPolled := math.Min(w.PolledQueues, 2)
	pollFixed := w.IdlePollsPerQueueMonth * (fifoPolled*p.SQSFIFOMillionReqs + (w.PolledQueues-fifoPolled)*p.SQSStdMillionReqs) / 1e6
	sqs := Component{Name: "SQS", Units: []Unit{{"FIFO requests", fifo}, {"standard requests", std}},
		PerTurnUSD:    million(fifo, p.SQSFIFOMillionReqs) + million(std, p.SQSStdMillionReqs),
		FixedMonthUSD: pollFixed,
		Note:          "fixed: Lambda's pollers on the empty input, background, delay and wake-up DLQ queues"}

	// DSQL: each slice's load and commit, priced by AWS's metering
	// formulas (dsql.go) from the bytes they read and write; storage for
	// every agent's history, whether it runs or not.
	ds := dsqlSlice(&w, slices, completions)
	r.DSQL = ds
	dpus := slices * ds.Total()
	historyGB := w.HistoryBytesPerTurn * w.HistoryTurns / GiB
	dsql := Component{Name: "Aurora DSQL", Units: []Unit{{"DPUs", dpus}, {"SQL round trips", slices * w.SQLRoundTripsPerSlice},
		{"bytes read", slices * ds.ReadBytesPerLoad}, {"bytes written", slices * ds.WriteBytesPerCommit}},
		PerTurnUSD:       million(dpus, p.DSQLMillionDPUs),
		PerAgentMonthUSD: historyGB * p.DSQLGBMonth,
		Note:             "per agent: its stored history"}

	// DynamoDB: the dedup marks, each a write unit (items under 1 KB),
	// stored (with point-in-time recovery) until their TTL.
	writes := slices * w.DynamoWritesPerSlice
	reads := slices * w.DynamoReadsPerSlice
	itemGBMonths := writes * w.DedupItemBytes / GiB * w.DedupTTLDays / DaysPerMonth
	dynamo := Component{Name: "DynamoDB", Units: []Unit{{"write units", writes}, {"read units", reads}, {"GB-months stored", itemGBMonths}},
		PerTurnUSD: million(writes, p.DynamoMillionWRUs) + million(reads, p.DynamoMillionRRUs) +
			itemGBMonths*(p.DynamoGBMonth+p.DynamoPITRGBMonth)}

	sched := Component{Name: "EventBridge Scheduler", Units: []Unit{{"invocations", w.LongSleepsPerTurn}},
		PerTurnUSD: million(w.LongSleepsPerTurn, p.SchedulerMillionInvs)}

	logGB := invocations * w.LogBytesPerInvocation / GiB
	logs := Component{Name: "CloudWatch Logs", Units: []Unit{{"GB ingested", logGB}},
		PerTurnUSD: logGB * (p.LogsIngestGB + p.LogsStoreGBMonth*LogRetentionDays/DaysPerMonth)}

	r.Components = []Component{lambda, sqs, dsql, dynamo, sched, logs}
	for _, c := range r.Components {
		r.PerTurnUSD += c.PerTurnUSD
		r.IdleAgentMonthUSD += c.PerAgentMonthUSD
		r.FixedMonthUSD += c.FixedMonthUSD
	}
	r.PerThousandTurnsUSD = 1000 * r.PerTurnUSD
	r.TotalMonthUSD = r.TurnsPerMonth*r.PerTurnUSD + w.Agents*r.IdleAgentMonthUSD + r.FixedMonthUSD

	// Always on: the conventional design's bytes per waiting agent, on
	// the cheapest instances that hold them all (at least one).
	r.MemoryNeededBytes = w.Agents * w.ConventionalBytesPerAgent
	for i, in := range p.Instances {
		usable := in.MemoryGiB * GiB * (1 - w.InstanceHeadroom)
		c := InstanceCost{Instance: in, Count: max(1, int(math.Ceil(r.MemoryNeededBytes/usable)))}
		c.MonthlyUSD = float64(c.Count) * in.HourlyUSD * HoursPerMonth
		r.AlwaysOn = append(r.AlwaysOn, c)
		if i == 0 || c.MonthlyUSD < r.Cheapest.MonthlyUSD {
			r.Cheapest = c
		}
	}
	perAgentDay := w.Agents * r.PerTurnUSD * DaysPerMonth
	switch margin := r.Cheapest.MonthlyUSD - r.FixedMonthUSD - w.Agents*r.IdleAgentMonthUSD; {
	case margin <= 0:
		r.BreakEvenTurnsPerDay = 0
	case perAgentDay == 0:
		r.BreakEvenTurnsPerDay = math.Inf(1)
	default:
		r.BreakEvenTurnsPerDay = margin / perAgentDay
	}
	return r, nil
}
