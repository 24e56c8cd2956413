package chaos_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

// rendezvous holds the first completion of each thread until both systems
// have asked for it (or a second passed), so both slices of a thread load
// the same version before either commits: a conflict on every thread.
type rendezvous struct {
	runtime.Model
	mu    sync.Mutex
	meets map[string]chan struct{}
	seen  map[string]int
}

func (r *rendezvous) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	if req.Turn() == 0 {
		r.mu.Lock()
		ch, ok := r.meets[req.ID()]
		if !ok {
			ch = make(chan struct{})
			r.meets[req.ID()] = ch
		}
		r.seen[req.ID()]++
		if r.seen[req.ID()] == 2 {
			close(ch)
		}
		r.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return r.Model.Complete(ctx, req, w)
}

// conflictCounter counts slices that lost a commit race.
type conflictCounter struct{ n atomic.Int64 }

func (c *conflictCounter) Observe(ctx context.Context, ev runtime.Event) {
	if ev.Type == runtime.EventSliceFinished && errors.Is(ev.Err, runtime.ErrConflict) {
		c.n.Add(1)
	}
}

func startSystem(t *testing.T, cfg local.Config) *local.System {
	t.Helper()
	sys, err := local.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Stop)
	return sys
}

func waitIdle(t *testing.T, systems ...*local.System) {
	t.Helper()
	for _, s := range systems {
		select {
		case <-s.Idle():
		case <-time.After(60 * time.Second):
			t.Fatalf("a system did not go idle; %d threads active", s.Active())
		}
	}
}

// TestConflictStormOnPostgres is a DSQL conflict storm on the real history
// store: two embedded systems, standing in for two Lambda invocations that
// got the same SQS batch after a visibility timeout, run the same messages
// of 40 threads at once against one PostgreSQL database at snapshot
// isolation (as DSQL runs). Every thread's first slice races its twin; the
// loser gets runtime.ErrConflict (from a version mismatch or from
// serialization failures, SQLSTATE 40001, outlasting the store's retries),
// its system retries, and the retry finds the work done. Each thread ends
// with exactly the history of a single run and nothing is dead-lettered.
func TestConflictStormOnPostgres(t *testing.T) {
	dsn := testenv.Need(t, "AGENTSLICE_TEST_PG_DSN")
	ctx := context.Background()
	schema := "chaos_storm_" + randomHex(6)
	pool, drop, err := freshSchema(ctx, dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	// A second pool on the same schema: the other "Lambda".
	pc := pool.Config().Copy()
	pool2, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool2.Close)

	const threads = 40
	quiet := slog.New(slog.DiscardHandler)
	m := &rendezvous{Model: &model.Sim{Chunks: 2, Tool: "run_command", ToolArgs: `{"command":"make"}`},
		meets: map[string]chan struct{}{}, seen: map[string]int{}}
	conflicts := &conflictCounter{}
	var systems []*local.System
	for _, p := range []*pgxpool.Pool{pool, pool2} {
		tool := &runtimetest.RecordingTool{Reply: func(inv runtime.Invocation) (string, bool) { return "built", true }}
		tb := runtime.NewToolbox().MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "run_command"}, Async: tool})
		sys := startSystem(t, local.Config{Model: m, Tools: tb, History: dsql.New(p, dsql.Options{}), Observer: conflicts,
			Logger: quiet, SliceAttempts: 6, RetryBase: 5 * time.Millisecond, Limits: runtime.Limits{RetryBase: time.Millisecond}})
		tool.Queue = sys
		systems = append(systems, sys)
	}
	var wg sync.WaitGroup
	for _, sys := range systems {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range threads {
				id := fmt.Sprintf("storm-%02d", i)
				if err := sys.Send(ctx, runtime.Message{V: 1, ID: "u-" + id, ThreadID: id, Kind: runtime.KindUser, Text: "build it"}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	waitIdle(t, systems...)
	store := dsql.New(pool, dsql.Options{})
	for i := range threads {
		id := fmt.Sprintf("storm-%02d", i)
		th, err := store.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := kindsOf(th.Items); got != "user,assistant,tool_call,tool_result,assistant" {
			t.Errorf("thread %s after the storm: %s, want one exchange\n%s", id, got, runtimetest.Transcript(th.Items))
		}
		if th.State.Pending != nil || len(th.State.Outbox) > 0 {
			t.Errorf("thread %s left pending %+v, outbox %d", id, th.State.Pending, len(th.State.Outbox))
		}
	}
	for i, sys := range systems {
		if dead, n := sys.DeadLetters(); n > 0 {
			t.Errorf("system %d dead-lettered %d messages: %+v", i, n, dead[0])
		}
	}
	if conflicts.n.Load() < threads/2 {
		t.Fatalf("only %d slices lost a race: not a storm", conflicts.n.Load())
	}
	t.Logf("%d slices lost a commit race and were retried", conflicts.n.Load())
}

// throttlingAPI stands between the dedup store and DynamoDB Local and
// refuses the first calls of each kind the way a throttled table does.
type throttlingAPI struct {
	dedup.API
	puts, gets       atomic.Int64
	putLimit, getLim int64
}

func (a *throttlingAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if a.puts.Add(1) <= a.putLimit {
		return nil, &types.ProvisionedThroughputExceededException{Message: aws.String("The level of configured provisioned throughput for the table was exceeded")}
	}
	return a.API.PutItem(ctx, in, opts...)
}

func (a *throttlingAPI) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	if a.gets.Add(1) <= a.getLim {
		return nil, &types.ThrottlingException{Message: aws.String("Rate of requests exceeds the allowed throughput")}
	}
	return a.API.BatchGetItem(ctx, in, opts...)
}

// flakyFirstCommit fails each thread's first commit, so every slice is
// retried and the retry (not a first delivery) reads the dedup store.
type flakyFirstCommit struct {
	runtime.HistoryStore
	mu   sync.Mutex
	seen map[string]bool
}

func (f *flakyFirstCommit) Commit(ctx context.Context, c *runtime.Commit) error {
	f.mu.Lock()
	first := !f.seen[c.ThreadID]
	f.seen[c.ThreadID] = true
	f.mu.Unlock()
	if first {
		return errors.New("connection reset by peer")
	}
	return f.HistoryStore.Commit(ctx, c)
}

// TestDynamoDBThrottlingEndToEnd runs the embedded system on the real
// DynamoDB dedup store (DynamoDB Local) while DynamoDB throttles: the
// first reads and writes are refused. A throttled read fails the slice with
// dedup.ErrThrottled and the slice is retried; a throttled write is only
// logged (history is the authority), so a later redelivery is still
// recognised, from history. Histories come out exactly once and nothing is
// dead-lettered.
func TestDynamoDBThrottlingEndToEnd(t *testing.T) {
	endpoint := testenv.Need(t, "AGENTSLICE_TEST_DYNAMODB_ENDPOINT")
	ctx := context.Background()
	client := dynamodb.NewFromConfig(awstest.Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	table := awstest.Name(t, "-"+randomHex(4))
	if err := dedup.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	api := &throttlingAPI{API: client, putLimit: 4, getLim: 3}
	dd, err := dedup.New(api, dedup.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	var throttled atomic.Int64
	obs := observerFunc(func(ev runtime.Event) {
		if errors.Is(ev.Err, dedup.ErrThrottled) {
			throttled.Add(1)
		}
	})
	store := local.NewHistoryStore()
	tool := &runtimetest.RecordingTool{Reply: func(inv runtime.Invocation) (string, bool) { return "ok", true }}
	tb := runtime.NewToolbox().MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "run_command"}, Async: tool})
	sys := startSystem(t, local.Config{Model: &model.Sim{Chunks: 2, Tool: "run_command", ToolArgs: `{}`}, Tools: tb,
		History: &flakyFirstCommit{HistoryStore: store, seen: map[string]bool{}}, Dedup: dd, Observer: obs,
		Logger: slog.New(slog.DiscardHandler), SliceAttempts: 6, RetryBase: time.Millisecond, Limits: runtime.Limits{RetryBase: time.Millisecond}})
	tool.Queue = sys
	msgs := make([]runtime.Message, 0, 5)
	for i := range 5 {
		msgs = append(msgs, runtime.Message{V: 1, ID: fmt.Sprintf("u%d", i), ThreadID: fmt.Sprintf("thr-%d", i), Kind: runtime.KindUser, Text: "go"})
	}
	if err := sys.Send(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, sys)
	before := map[string]string{}
	for _, m := range msgs {
		th, _ := store.Load(ctx, m.ThreadID)
		before[m.ThreadID] = runtimetest.Transcript(th.Items)
		if got := kindsOf(th.Items); got != "user,assistant,tool_call,tool_result,assistant" {
			t.Errorf("thread %s: %s", m.ThreadID, got)
		}
	}
	// Redeliver everything: recognised from the dedup store where the mark
	// got through, from history where DynamoDB throttled it.
	if err := sys.Send(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, sys)
	for _, m := range msgs {
		th, _ := store.Load(ctx, m.ThreadID)
		if got := runtimetest.Transcript(th.Items); got != before[m.ThreadID] {
			t.Errorf("thread %s changed on redelivery:\n%s", m.ThreadID, got)
		}
	}
	if dead, n := sys.DeadLetters(); n > 0 {
		t.Fatalf("%d dead letters: %+v", n, dead[0])
	}
	if api.gets.Load() <= api.getLim || api.puts.Load() <= api.putLimit {
		t.Fatalf("DynamoDB saw %d reads and %d writes: the throttling was never passed", api.gets.Load(), api.puts.Load())
	}
	if throttled.Load() == 0 {
		t.Fatal("no slice saw dedup.ErrThrottled")
	}
	t.Logf("%d slice events carried dedup.ErrThrottled; %d reads and %d writes reached DynamoDB Local",
		throttled.Load(), api.gets.Load()-api.getLim, api.puts.Load()-api.putLimit)
}

type observerFunc func(ev runtime.Event)

func (f observerFunc) Observe(ctx context.Context, ev runtime.Event) { f(ev) }
