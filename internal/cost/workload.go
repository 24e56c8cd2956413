package cost

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// Workload describes what the agents do, and the few figures about the
// deployment the model cannot count from the code. Every field has a
// default (DefaultWorkload) and a source (Sources) printed beside the
// result.
type Workload struct {
	Agents              float64 `json:"agents"`
	TurnsPerAgentPerDay float64 `json:"turns_per_agent_per_day"`
	ToolCallsPerTurn    float64 `json:"tool_calls_per_turn"`
	CompletionsPerTurn  float64 `json:"completions_per_turn"`
	ShortSleepsPerTurn  float64 `json:"short_sleeps_per_turn"`
	LongSleepsPerTurn   float64 `json:"long_sleeps_per_turn"`
	HistoryBytesPerTurn float64 `json:"history_bytes_per_turn"`
	HistoryTurns        float64 `json:"history_turns"`

	ModelSecondsPerCompletion float64 `json:"model_seconds_per_completion"`
	SliceOverheadMs           float64 `json:"slice_overhead_ms"`
	CallbackMs                float64 `json:"callback_ms"`
	RelayMs                   float64 `json:"relay_ms"`
	SlicesPerInvocation       float64 `json:"slices_per_invocation"`
	MessageKB                 float64 `json:"message_kb"`
	ReplyKB                   float64 `json:"reply_kb"`
	LogBytesPerInvocation     float64 `json:"log_bytes_per_invocation"`

	SQLRoundTripsPerSlice   float64 `json:"sql_round_trips_per_slice"`
	DynamoWritesPerSlice    float64 `json:"dynamodb_writes_per_slice"`
	DynamoReadsPerSlice     float64 `json:"dynamodb_reads_per_slice"`
	DSQLThreadRowBytes      float64 `json:"dsql_thread_row_bytes"`
	DSQLThreadIDBytes       float64 `json:"dsql_thread_id_bytes"`
	DSQLReadBytesPerLoad    float64 `json:"dsql_read_bytes_per_load"`
	DSQLRowsPerCommit       float64 `json:"dsql_rows_per_commit"`
	DSQLWriteBytesPerCommit float64 `json:"dsql_write_bytes_per_commit"`
	DSQLComputeMsPerLoad    float64 `json:"dsql_compute_ms_per_load"`
	DSQLComputeMsPerCommit  float64 `json:"dsql_compute_ms_per_commit"`
	DedupItemBytes          float64 `json:"dedup_item_bytes"`
	DedupTTLDays            float64 `json:"dedup_ttl_days"`
	IdlePollsPerQueueMonth  float64 `json:"idle_polls_per_queue_month"`
	PolledQueues            float64 `json:"polled_queues"`

	ConventionalBytesPerAgent float64 `json:"conventional_bytes_per_agent"`
	InstanceHeadroom          float64 `json:"instance_headroom"`
}

// Field is one input: its JSON (and, with dashes, flag) name, what it
// means and where its value came from by default.
type Field struct {
	Name, Usage, Default string
	V                    *float64
	// Min is the least valid value; Whole asks for an integer; Zero
	// allows 0 even when Min is above it (CompletionsPerTurn's "derive").
	Min         float64
	Whole, Zero bool
}

// Fields lists w's inputs in print order.
func (w *Workload) Fields() []Field {
	return []Field{
		{"agents", "agents in the deployment", "example", &w.Agents, 1, true, false},
		{"turns_per_agent_per_day", "turns (a user or event message and everything it causes) per agent per day", "example", &w.TurnsPerAgentPerDay, 0, false, false},
		{"tool_calls_per_turn", "asynchronous tool calls per turn (each result comes back through the receiver and starts a slice)", "example", &w.ToolCallsPerTurn, 0, false, false},
		{"completions_per_turn", "model completions per turn (0: one per slice)", "one per slice", &w.CompletionsPerTurn, 1, false, true},
		{"short_sleeps_per_turn", "sleeps of at most 900 s per turn (delay queue and relay)", "example", &w.ShortSleepsPerTurn, 0, false, false},
		{"long_sleeps_per_turn", "sleeps over 900 s per turn (EventBridge Scheduler)", "example", &w.LongSleepsPerTurn, 0, false, false},
		{"history_bytes_per_turn", "bytes of history a turn adds to the store", "density benchmark, unique profile: 57,187 B raw per 20 turns", &w.HistoryBytesPerTurn, 0, false, false},
		{"history_turns", "turns of history each agent keeps stored", "density benchmark: 20 turns", &w.HistoryTurns, 0, false, false},
		{"model_seconds_per_completion", "seconds the slice function waits for one completion (streaming; billed as Lambda duration)", "assumption", &w.ModelSecondsPerCompletion, 0, false, false},
		{"slice_overhead_ms", "milliseconds of a slice besides the model: store round trips, queue sends, tool dispatch", "assumption", &w.SliceOverheadMs, 0, false, false},
		{"callback_ms", "milliseconds of one RAP receiver invocation", "assumption", &w.CallbackMs, 0, false, false},
		{"relay_ms", "milliseconds of one delay relay invocation", "assumption", &w.RelayMs, 0, false, false},
		{"slices_per_invocation", "slices per slice-function invocation (batches of up to 10 threads' messages)", "assumption: 1, batches of one (a quiet queue)", &w.SlicesPerInvocation, 1, false, false},
		{"message_kb", "average KB of a message into the input queue (SQS bills each 64 KB chunk)", "assumption", &w.MessageKB, 0, false, false},
		{"reply_kb", "average KB of a reply on the output queue", "assumption", &w.ReplyKB, 0, false, false},
		{"log_bytes_per_invocation", "CloudWatch log bytes per function invocation (Lambda's START/END/REPORT lines, warnings)", "assumption", &w.LogBytesPerInvocation, 0, false, false},
		{"sql_round_trips_per_slice", "DSQL round trips per slice (1 load, 1 commit)", "code path (PerSlice)", &w.SQLRoundTripsPerSlice, 0, false, false},
		{"dynamodb_writes_per_slice", "DynamoDB conditional puts per slice (one per consumed message ID, one outbox-sent mark)", "code path (PerSlice)", &w.DynamoWritesPerSlice, 0, false, false},
		{"dynamodb_reads_per_slice", "DynamoDB reads per slice (0: first deliveries skip the dedup lookup)", "code path (PerSlice)", &w.DynamoReadsPerSlice, 0, false, false},
		{"dsql_thread_row_bytes", "bytes of a thread's row (its state): read by each load, rewritten by each commit", "storage load test on PostgreSQL (internal/dsql's Meter), 40 threads, 2026-12-02: 399 B", &w.DSQLThreadRowBytes, 0, false, false},
		{"dsql_thread_id_bytes", "bytes of a thread ID (part of each item row's key)", "assumption", &w.DSQLThreadIDBytes, 0, false, false},
		{"dsql_read_bytes_per_load", "bytes one load reads (0: the thread row and the whole stored history, history_turns turns)", "derived", &w.DSQLReadBytesPerLoad, 0, false, false},
		{"dsql_rows_per_commit", "rows one commit writes (0: the thread row and the turn's items spread over its slices)", "derived (code path)", &w.DSQLRowsPerCommit, 0, false, false},
		{"dsql_write_bytes_per_commit", "bytes one commit writes (0: the thread row and the turn's item bytes spread over its slices)", "derived", &w.DSQLWriteBytesPerCommit, 0, false, false},
		{"dsql_compute_ms_per_load", "DSQL compute milliseconds of one load (ComputeDPU)", "assumption, not measured on DSQL: AWS's billing example takes 3 ms for a point lookup", &w.DSQLComputeMsPerLoad, 0, false, false},
		{"dsql_compute_ms_per_commit", "DSQL compute milliseconds of one commit (ComputeDPU)", "assumption, not measured on DSQL: AWS's billing example takes 8 ms for a single-row insert", &w.DSQLComputeMsPerCommit, 0, false, false},
		{"dedup_item_bytes", "bytes of one dedup item, DynamoDB's 100-byte overhead included", "assumption", &w.DedupItemBytes, 0, false, false},
		{"dedup_ttl_days", "days a dedup item lives (dedup.DefaultTTL)", "code (internal/dedup)", &w.DedupTTLDays, 0, false, false},
		{"idle_polls_per_queue_month", "SQS receives Lambda's pollers make on one empty queue per month (fixed cost)", "assumption, not confirmed: 5 pollers x 20 s long polls", &w.IdlePollsPerQueueMonth, 0, false, false},
		{"polled_queues", "queues with a Lambda event source (input, background input, delay, wake-up DLQ)", "code (internal/stack)", &w.PolledQueues, 0, true, false},
		{"conventional_bytes_per_agent", "bytes per waiting agent of the conventional in-memory design (goroutine per agent, history in a slice)", "density benchmark, unique profile, 80,000 agents (docs/performance.md)", &w.ConventionalBytesPerAgent, 0, false, false},
		{"instance_headroom", "share of an instance's memory kept free (OS, runtime, peaks)", "assumption", &w.InstanceHeadroom, 0, false, false},
	}
}

// Code-path figures (the stack's own: PerSlice and internal/stack,
// internal/dedup); tests pin them.
const (
	// DefaultDedupTTLDays is dedup.DefaultTTL in days.
	DefaultDedupTTLDays = 15
	// DefaultPolledQueues: the input queue, the background input queue,
	// the delay queue and the wake-up DLQ each have an event source.
	DefaultPolledQueues = 4
	// DefaultDSQLThreadRowBytes is the mean thread row the storage load
	// test's commits wrote on PostgreSQL (internal/dsql's Meter; 399 B in
	// TestCostModelMatchesMeasured's run of 2026-12-02, which prints it).
	DefaultDSQLThreadRowBytes = 400
)

// DefaultWorkload is the example workload `agentslice cost` starts from.
func DefaultWorkload() Workload {
	ps := PerSlice(1)
	return Workload{
		Agents:              1000,
		TurnsPerAgentPerDay: 4,
		ToolCallsPerTurn:    1,
		HistoryBytesPerTurn: 2860,
		HistoryTurns:        20,

		ModelSecondsPerCompletion: 5,
		SliceOverheadMs:           50,
		CallbackMs:                20,
		RelayMs:                   20,
		SlicesPerInvocation:       1,
		MessageKB:                 1,
		ReplyKB:                   2,
		LogBytesPerInvocation:     600,

		SQLRoundTripsPerSlice:  ps.SQLRoundTrips,
		DynamoWritesPerSlice:   ps.DynamoWrites,
		DynamoReadsPerSlice:    ps.DynamoReads,
		DSQLThreadRowBytes:     DefaultDSQLThreadRowBytes,
		DSQLThreadIDBytes:      36,
		DSQLComputeMsPerLoad:   3,
		DSQLComputeMsPerCommit: 8,
		DedupItemBytes:         200,
		DedupTTLDays:           DefaultDedupTTLDays,
		IdlePollsPerQueueMonth: 5 * 3 * 60 * HoursPerMonth,
		PolledQueues:           DefaultPolledQueues,

		ConventionalBytesPerAgent: 62112,
		InstanceHeadroom:          0.25,
	}
}

// Sources records where each input's value came from, by JSON name.
type Sources map[string]string

// DefaultSources returns each field's default source.
func DefaultSources(w *Workload) Sources {
	s := Sources{}
	for _, f := range w.Fields() {
		s[f.Name] = "default (" + f.Default + ")"
	}
	return s
}

// Validate checks every field; the error names the first bad one.
func (w *Workload) Validate() error {
	for _, f := range w.Fields() {
		v := *f.V
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Errorf("%s: %v is not a number", f.Name, v)
		case f.Zero && v == 0:
		case v < f.Min:
			return fmt.Errorf("%s: %v is below %v", f.Name, v, f.Min)
		case f.Whole && v != math.Trunc(v):
			return fmt.Errorf("%s: %v is not a whole number", f.Name, v)
		}
	}
	if w.InstanceHeadroom >= 1 {
		return fmt.Errorf("instance_headroom: %v leaves no memory (want 0 ≤ x < 1)", w.InstanceHeadroom)
	}
	return nil
}

// DecodeWorkload overlays a JSON object on w: fields the object leaves out
// keep their values, each field it sets gets source as its source. An
// unknown field or a value of the wrong type is an error naming the field.
func DecodeWorkload(r io.Reader, source string, w *Workload, src Sources) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("cost: reading workload %s: %w", source, err)
	}
	var set map[string]any
	if err := decodeStrict(b, &set); err != nil {
		return fmt.Errorf("cost: workload %s: %w", source, err)
	}
	if set == nil {
		return fmt.Errorf("cost: workload %s: want a JSON object", source)
	}
	if err := decodeStrict(b, w); err != nil {
		return fmt.Errorf("cost: workload %s: %w", source, err)
	}
	for name := range set {
		src[name] = source
	}
	return nil
}

// errNoAgents is returned by Estimate for a workload that failed to say
// how many agents it has (a zero Workload).
var errNoAgents = errors.New("cost: the workload has no agents (agents: 0); start from DefaultWorkload")
