// Command storage drives many threads through the embedded agent system
// (internal/local) backed by the production stores instead of memory: the
// DSQL history store (internal/dsql) on PostgreSQL and the DynamoDB dedup
// store (internal/dedup) on DynamoDB Local. Each thread plays -turns turns
// of a user message, a completion calling an asynchronous tool, the tool's
// result through the input queue and a closing completion, with at most
// -concurrency threads in flight. It reports completions per second, slice
// latency percentiles, and storage calls and network round trips per slice
// (the stores are wrapped to count calls; the PostgreSQL connections and
// the DynamoDB HTTP client count round trips). Every history is read back
// and checked at the end.
//
//	scripts/services/postgres.sh start && scripts/services/dynamodb.sh start
//	eval "$(scripts/services/postgres.sh env)" "$(scripts/services/dynamodb.sh env)"
//	go run ./loadtest/storage -threads 10000
//
// or `make loadtest-storage`, which starts and stops the services. It reads
// AGENTSLICE_TEST_PG_DSN and AGENTSLICE_TEST_DYNAMODB_ENDPOINT, works in a
// fresh PostgreSQL schema and a fresh DynamoDB table, and drops both at the
// end. The figures describe this machine and these local stand-ins, not
// Aurora DSQL or DynamoDB: a local PostgreSQL answers in tens of
// microseconds where DSQL takes milliseconds, so read the round trips per
// slice as the portable number.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/cost"
	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

type config struct {
	threads, turns, concurrency int
	pgConns                     int
	dsn, dynamoEndpoint         string
	out                         string
}

func (c *config) validate() error {
	switch {
	case c.threads < 1:
		return fmt.Errorf("-threads must be at least 1, got %d", c.threads)
	case c.turns < 1:
		return fmt.Errorf("-turns must be at least 1, got %d", c.turns)
	case c.concurrency < 1:
		return fmt.Errorf("-concurrency must be at least 1, got %d", c.concurrency)
	case c.pgConns < 1:
		return fmt.Errorf("-pg-conns must be at least 1, got %d", c.pgConns)
	case c.dsn == "":
		return errors.New("AGENTSLICE_TEST_PG_DSN is not set: run scripts/services/postgres.sh start and eval its env")
	case c.dynamoEndpoint == "":
		return errors.New("AGENTSLICE_TEST_DYNAMODB_ENDPOINT is not set: run scripts/services/dynamodb.sh start and eval its env")
	}
	return nil
}

func main() {
	c := config{dsn: os.Getenv("AGENTSLICE_TEST_PG_DSN"), dynamoEndpoint: os.Getenv("AGENTSLICE_TEST_DYNAMODB_ENDPOINT")}
	flag.IntVar(&c.threads, "threads", 10000, "threads to run")
	flag.IntVar(&c.turns, "turns", 2, "turns per thread (each: 2 slices, 2 completions)")
	flag.IntVar(&c.concurrency, "concurrency", 256, "threads in flight at once")
	flag.IntVar(&c.pgConns, "pg-conns", 16, "PostgreSQL connections in the pool")
	flag.StringVar(&c.out, "out", "loadtest/results", "directory for storage.json")
	flag.Parse()
	if err := c.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "storage:", err)
		os.Exit(2)
	}
	res, err := run(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "storage:", err)
		os.Exit(1)
	}
	res.print(os.Stdout)
	if err := os.MkdirAll(c.out, 0o755); err == nil {
		b, _ := json.MarshalIndent(res, "", "  ")
		_ = os.WriteFile(filepath.Join(c.out, "storage.json"), append(b, '\n'), 0o644)
	}
	line, _ := json.Marshal(res)
	fmt.Println(string(line))
}

// Result is what one run measured.
type Result struct {
	Threads, Turns, Concurrency, PGConns int
	Machine                              string
	Seconds                              float64
	Slices, Completions                  int64
	CompletionsPerSec, SlicesPerSec      float64
	// Slice latency, from the engine's slice_finished events (load to last
	// write, model and tool included; both are in-process here).
	SliceP50Ms, SliceP90Ms, SliceP99Ms, SliceMaxMs float64
	// Store calls per slice, by kind, and network round trips per slice.
	LoadsPerSlice, CommitsPerSlice, SeenPerSlice, MarksPerSlice float64
	PGRoundTripsPerSlice, DynamoRoundTripsPerSlice              float64
	RoundTripsPerSlice                                          float64
	FailedSlices, DeadLetters                                   int
	Verified                                                    int
	// Phases is the latency of each phase of a slice, from the engine's
	// timed events: load, completion, commit, dispatch, mark (in order).
	Phases []Phase
	// DSQL is what the history store read and wrote, measured by its
	// Meter and checked against the rows PostgreSQL stores.
	DSQL DSQLMeasured
}

// DSQLFigures is cost.StorageDSQL: the JSON result is what
// `agentslice cost -storage-result` reads.
type DSQLFigures = cost.StorageDSQL

// DSQLMeasured is the bytes behind Aurora DSQL's DPUs, per load and per
// commit (means), and the DPUs (compute left out) priced per transaction
// with AWS's formulas, per slice.
type DSQLMeasured struct {
	DSQLFigures
	// CheckedItemRows is how many item rows PostgreSQL holds whose sizes
	// agreed with the meter's.
	CheckedItemRows int64
}

// Phase is the latency of one phase of the slices.
type Phase struct {
	Name          string
	Count         int
	P50Ms, P99Ms  float64
	MeanMs, MaxMs float64
	PerSlice      float64 // how often a slice goes through it
}

// phaseOf names the slice phase an event times ("" for none).
func phaseOf(t runtime.EventType) string {
	switch t {
	case runtime.EventThreadLoaded:
		return "load"
	case runtime.EventCompletionFinished:
		return "completion"
	case runtime.EventTurnCommitted:
		return "commit"
	case runtime.EventToolDispatched:
		return "dispatch"
	case runtime.EventInputsMarked:
		return "mark"
	}
	return ""
}

var phaseNames = []string{"load", "completion", "commit", "dispatch", "mark"}

func (r *Result) print(w *os.File) {
	fmt.Fprintf(w, "# agentslice storage load: %d threads x %d turns, %d in flight, %d PostgreSQL connections; %s\n",
		r.Threads, r.Turns, r.Concurrency, r.PGConns, r.Machine)
	fmt.Fprintf(w, "completions      %d in %.1fs: %.0f completions/s, %.0f slices/s\n", r.Completions, r.Seconds, r.CompletionsPerSec, r.SlicesPerSec)
	fmt.Fprintf(w, "slice latency    p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.1fms\n", r.SliceP50Ms, r.SliceP90Ms, r.SliceP99Ms, r.SliceMaxMs)
	for _, p := range r.Phases {
		fmt.Fprintf(w, "phase %-10s p50 %.2fms  p99 %.2fms  mean %.2fms  max %.1fms  (%.2f per slice)\n", p.Name, p.P50Ms, p.P99Ms, p.MeanMs, p.MaxMs, p.PerSlice)
	}
	fmt.Fprintf(w, "store calls      per slice: %.2f loads, %.2f commits, %.2f dedup reads, %.2f dedup writes\n",
		r.LoadsPerSlice, r.CommitsPerSlice, r.SeenPerSlice, r.MarksPerSlice)
	fmt.Fprintf(w, "round trips      per slice: %.2f PostgreSQL + %.2f DynamoDB = %.2f\n", r.PGRoundTripsPerSlice, r.DynamoRoundTripsPerSlice, r.RoundTripsPerSlice)
	d := r.DSQL
	fmt.Fprintf(w, "DSQL bytes       per load %.0f read; per commit %.2f rows, %.0f bytes written (thread row %.0f); %.4f DPUs per slice besides compute\n",
		d.ReadBytesPerLoad, d.RowsPerCommit, d.WriteBytesPerCommit, d.ThreadRowBytes, d.IODPUsPerSlice)
	fmt.Fprintf(w, "failures         %d failed slices (retried), %d dead letters; %d/%d histories verified\n", r.FailedSlices, r.DeadLetters, r.Verified, r.Threads)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func run(ctx context.Context, c config) (*Result, error) {
	trips := &tripCounter{}
	pool, drop, err := openSchema(ctx, c, trips)
	if err != nil {
		return nil, err
	}
	defer drop()
	ddb, dropTable, err := openTable(ctx, c, trips)
	if err != nil {
		return nil, err
	}
	defer dropTable()

	meter := &dsqlMeter{}
	history := &countingHistory{HistoryStore: dsql.New(pool, dsql.Options{Meter: meter})}
	dd := &countingDedup{DedupStore: ddb}
	obs := &observer{}
	d := &driver{c: c, done: make(chan struct{}), turn: map[string]int{}}
	tb := runtime.NewToolbox()
	sys, err := local.New(local.Config{
		Model:    &model.Sim{Chunks: 3, Tool: "run_command", ToolArgs: `{"command":"go test ./..."}`},
		Tools:    tb,
		History:  history,
		Dedup:    dd,
		Output:   local.OutputFunc(d.publish),
		Observer: obs,
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return nil, err
	}
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "run_command", Description: "Run a shell command."}, Async: replyTool{sys}})
	d.sys = sys
	if err := sys.Start(ctx); err != nil {
		return nil, err
	}
	defer sys.Stop()

	trips.reset()
	start := time.Now()
	d.start()
	select {
	case <-d.done:
	case <-time.After(time.Duration(c.threads*c.turns)*50*time.Millisecond + time.Minute):
		return nil, fmt.Errorf("timed out: %d of %d threads finished", d.finished.Load(), c.threads)
	}
	select {
	case <-sys.Idle():
	case <-time.After(time.Minute):
		return nil, errors.New("threads still active a minute after the last reply")
	}
	elapsed := time.Since(start)
	if err := d.firstErr(); err != nil {
		return nil, err
	}
	pgTrips, ddbTrips := trips.pg.Load(), trips.ddb.Load()

	res := &Result{Threads: c.threads, Turns: c.turns, Concurrency: c.concurrency, PGConns: c.pgConns,
		Machine: fmt.Sprintf("%s/%s, %d CPUs, GOMAXPROCS %d", goruntime.GOOS, goruntime.GOARCH, goruntime.NumCPU(), goruntime.GOMAXPROCS(0)),
		Seconds: elapsed.Seconds()}
	lat := obs.latencies()
	res.Slices = int64(len(lat))
	res.Completions = obs.completions.Load()
	res.FailedSlices = int(obs.failed.Load())
	_, res.DeadLetters = sys.DeadLetters()
	res.CompletionsPerSec = float64(res.Completions) / res.Seconds
	res.SlicesPerSec = float64(res.Slices) / res.Seconds
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	res.SliceP50Ms, res.SliceP90Ms, res.SliceP99Ms = pct(0.50), pct(0.90), pct(0.99)
	for _, name := range phaseNames {
		d := obs.phase(name)
		if len(d) == 0 {
			continue
		}
		var sum time.Duration
		for _, v := range d {
			sum += v
		}
		ms := func(v time.Duration) float64 { return float64(v) / float64(time.Millisecond) }
		res.Phases = append(res.Phases, Phase{Name: name, Count: len(d), P50Ms: ms(d[min(len(d)-1, len(d)/2)]),
			P99Ms: ms(d[min(len(d)-1, int(0.99*float64(len(d))))]), MeanMs: ms(sum) / float64(len(d)), MaxMs: ms(d[len(d)-1]),
			PerSlice: float64(len(d)) / float64(max(1, len(lat)))})
	}
	if len(lat) > 0 {
		res.SliceMaxMs = float64(lat[len(lat)-1]) / float64(time.Millisecond)
	}
	per := func(n int64) float64 { return float64(n) / float64(max(res.Slices, 1)) }
	res.LoadsPerSlice, res.CommitsPerSlice = per(history.loads.Load()), per(history.commits.Load())
	res.SeenPerSlice, res.MarksPerSlice = per(dd.seen.Load()), per(dd.marks.Load())
	res.PGRoundTripsPerSlice, res.DynamoRoundTripsPerSlice = per(pgTrips), per(ddbTrips)
	res.RoundTripsPerSlice = res.PGRoundTripsPerSlice + res.DynamoRoundTripsPerSlice

	if want := int64(c.threads * c.turns * 2); res.Completions != want {
		return nil, fmt.Errorf("ran %d completions, want %d", res.Completions, want)
	}
	if res.DeadLetters > 0 {
		dead, _ := sys.DeadLetters()
		return nil, fmt.Errorf("%d dead letters; first: %s: %s", res.DeadLetters, dead[0].Message.ID, dead[0].Reason)
	}
	// The meter's figures first: verify's loads are not the slices'.
	if res.DSQL, err = meter.result(ctx, pool, res.Slices, c.threads*c.turns); err != nil {
		return nil, err
	}
	if res.Verified, err = verify(ctx, history.HistoryStore, c); err != nil {
		return nil, err
	}
	return res, nil
}

// verify reads every history back and checks it holds exactly the turns
// played, each once.
func verify(ctx context.Context, h runtime.HistoryStore, c config) (int, error) {
	want := ""
	for i := range c.turns {
		if i > 0 {
			want += ","
		}
		want += "user,assistant,tool_call,tool_result,assistant"
	}
	var ok atomic.Int64
	var errMu sync.Mutex
	var firstErr error
	ids := make(chan int)
	var wg sync.WaitGroup
	for range c.pgConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids {
				id := threadID(i)
				th, err := h.Load(ctx, id)
				if err == nil {
					if got := kinds(th.Items); got != want {
						err = fmt.Errorf("thread %s holds %s, want %s", id, got, want)
					}
				}
				if err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					continue
				}
				ok.Add(1)
			}
		}()
	}
	for i := range c.threads {
		ids <- i
	}
	close(ids)
	wg.Wait()
	return int(ok.Load()), firstErr
}

func kinds(items []runtime.Item) string {
	s := ""
	for i, it := range items {
		if i > 0 {
			s += ","
		}
		s += it.Kind.String()
	}
	return s
}

func threadID(i int) string { return "load-" + strconv.Itoa(i) }

// openSchema creates a fresh schema, migrates it and returns a pool on it
// whose connections count round trips.
func openSchema(ctx context.Context, c config, trips *tripCounter) (*pgxpool.Pool, func(), error) {
	schema := "load_" + randomHex(6)
	admin, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, nil, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	cfg := dsql.Config{Dialect: dsql.Postgres, DSN: c.dsn, MaxConns: int32(c.pgConns), PingAfterIdle: -1}
	pc, err := cfg.PoolConfig()
	if err != nil {
		return nil, nil, err
	}
	pc.ConnConfig.RuntimeParams["search_path"] = schema
	pc.ConnConfig.RuntimeParams["default_transaction_isolation"] = "repeatable read" // DSQL's snapshot isolation
	trips.install(pc)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, nil, err
	}
	drop := func() {
		pool.Close()
		if c2, err := pgx.Connect(context.WithoutCancel(ctx), c.dsn); err == nil {
			_, _ = c2.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
			c2.Close(ctx)
		}
	}
	if err := dsql.Migrate(ctx, pool, dsql.Postgres); err != nil {
		drop()
		return nil, nil, fmt.Errorf("migrating: %w", err)
	}
	return pool, drop, nil
}

// openTable creates a fresh dedup table on DynamoDB Local, reached through
// an HTTP client that counts requests.
func openTable(ctx context.Context, c config, trips *tripCounter) (*dedup.Store, func(), error) {
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(c.dynamoEndpoint)
		o.HTTPClient = trips.httpClient()
	})
	table := "load-dedup-" + randomHex(4)
	if err := dedup.CreateTable(ctx, client, table); err != nil {
		return nil, nil, err
	}
	drop := func() {
		_, _ = client.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	}
	s, err := dedup.New(client, dedup.Config{Table: table})
	if err != nil {
		drop()
		return nil, nil, err
	}
	return s, drop, nil
}

// replyTool answers each call at once through the input queue, as a RAP
// tool answers through the callback receiver.
type replyTool struct{ q runtime.Queue }

func (t replyTool) Dispatch(ctx context.Context, inv runtime.Invocation) error {
	return t.q.Send(ctx, runtime.Message{V: 1, ID: runtime.DeriveID("res_", inv.ThreadID, inv.CallID),
		ThreadID: inv.ThreadID, Kind: runtime.KindToolResult, ToolCallID: inv.CallID, Text: "ok: 214 tests passed"})
}

// driver plays the users: a thread's reply starts its next turn, a
// finished thread makes room for the next one.
type driver struct {
	c        config
	sys      *local.System
	mu       sync.Mutex
	turn     map[string]int
	next     int
	finished atomic.Int64
	done     chan struct{}
	errMu    sync.Mutex
	err      error
}

func (d *driver) start() {
	d.mu.Lock()
	n := min(d.c.concurrency, d.c.threads)
	d.next = n
	d.mu.Unlock()
	for i := range n {
		d.send(threadID(i), 0)
	}
}

func (d *driver) send(thread string, turn int) {
	err := d.sys.Send(context.Background(), runtime.Message{V: 1, ID: "u" + strconv.Itoa(turn), ThreadID: thread,
		Kind: runtime.KindUser, Text: "run the tests, round " + strconv.Itoa(turn)})
	if err != nil {
		d.fail(err)
	}
}

func (d *driver) publish(ctx context.Context, ev runtime.OutputEvent) error {
	if ev.Kind != "reply" {
		d.fail(fmt.Errorf("thread %s: %s output: %s", ev.ThreadID, ev.Kind, ev.Text))
		return nil
	}
	d.mu.Lock()
	t := d.turn[ev.ThreadID] + 1
	d.turn[ev.ThreadID] = t
	launch := -1
	if t >= d.c.turns {
		delete(d.turn, ev.ThreadID)
		if d.next < d.c.threads {
			launch = d.next
			d.next++
		}
	}
	d.mu.Unlock()
	switch {
	case t < d.c.turns:
		d.send(ev.ThreadID, t)
	case launch >= 0:
		d.finished.Add(1)
		d.send(threadID(launch), 0)
	default:
		if d.finished.Add(1) == int64(d.c.threads) {
			close(d.done)
		}
	}
	return nil
}

func (d *driver) fail(err error) {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	if d.err == nil {
		d.err = err
	}
}

func (d *driver) firstErr() error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return d.err
}

// observer collects slice latencies and counts completions and failed
// slices.
type observer struct {
	mu          sync.Mutex
	lat         []time.Duration
	phases      map[string][]time.Duration
	completions atomic.Int64
	failed      atomic.Int64
}

func (o *observer) Observe(ctx context.Context, ev runtime.Event) {
	if p := phaseOf(ev.Type); p != "" && ev.Err == nil && ev.Reason == "" {
		o.mu.Lock()
		if o.phases == nil {
			o.phases = map[string][]time.Duration{}
		}
		o.phases[p] = append(o.phases[p], ev.Duration)
		o.mu.Unlock()
	}
	switch ev.Type {
	case runtime.EventCompletionFinished:
		o.completions.Add(1)
	case runtime.EventSliceFinished:
		if ev.Reason != "" {
			return // a note from inside the slice (a failed dedup write), not its end
		}
		if ev.Err != nil {
			o.failed.Add(1)
		}
		o.mu.Lock()
		o.lat = append(o.lat, ev.Duration)
		o.mu.Unlock()
	}
}

// phase returns the sorted durations of one phase.
func (o *observer) phase(name string) []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	d := slices.Clone(o.phases[name])
	slices.Sort(d)
	return d
}

func (o *observer) latencies() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	l := slices.Clone(o.lat)
	slices.Sort(l)
	return l
}
