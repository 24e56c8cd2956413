package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

type sink struct {
	mu   sync.Mutex
	msgs []runtime.Message
}

func (s *sink) Send(ctx context.Context, msgs ...runtime.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, msgs...)
	return nil
}

func newEngine(store runtime.HistoryStore, m runtime.Model) (*runtime.Engine, *sink) {
	q := &sink{}
	tb := runtime.NewToolbox()
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "echo"}, Sync: runtimetest.SyncFunc(
		func(ctx context.Context, env *runtime.SyncEnv, inv runtime.Invocation) (runtime.ToolOutput, error) {
			return runtime.ToolOutput{Text: "echo"}, nil
		})})
	return &runtime.Engine{History: store, Queue: q, Model: m, Tools: tb,
		Limits: runtime.Limits{RetryBase: time.Millisecond}}, q
}

func userMsg(thread, id string) runtime.Message {
	return runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindUser, Text: "hi " + id}
}

// barrierStore lets n loads through together, so n slices of one thread
// start from the same version (a visibility timeout expiring mid-slice).
type barrierStore struct {
	runtime.HistoryStore
	wg *sync.WaitGroup
}

func (b barrierStore) Load(ctx context.Context, id string) (*runtime.Thread, error) {
	th, err := b.HistoryStore.Load(ctx, id)
	b.wg.Done()
	b.wg.Wait()
	return th, err
}

// Invariant 2 (storage side): of two concurrent slices of one thread exactly
// one commits; the other fails with ErrConflict and, retried, is
// deduplicated or folded in without corrupting history.
func TestConcurrentSlicesOfOneThread(t *testing.T) {
	store := local.NewHistoryStore()
	var wg sync.WaitGroup
	wg.Add(2)
	bs := barrierStore{store, &wg}
	e1, _ := newEngine(bs, &model.Sim{Chunks: 1})
	e2, _ := newEngine(bs, &model.Sim{Chunks: 1})
	errs := make([]error, 2)
	var run sync.WaitGroup
	for i, e := range []*runtime.Engine{e1, e2} {
		run.Add(1)
		go func() {
			defer run.Done()
			_, errs[i] = e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}})
		}()
	}
	run.Wait()
	ok, conflicts := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, runtime.ErrConflict):
			conflicts++
		default:
			t.Fatalf("unexpected error %v", err)
		}
	}
	if ok != 1 || conflicts != 1 {
		t.Fatalf("ok %d conflicts %d, want 1 and 1 (errors %v)", ok, conflicts, errs)
	}
	// The loser's message is redelivered: it is recognised as processed.
	e3, _ := newEngine(store, &model.Sim{Chunks: 1})
	res, err := e3.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}})
	if err != nil || len(res.Duplicates) != 1 {
		t.Fatalf("redelivery: %+v %v", res, err)
	}
	th, _ := store.Load(context.Background(), "t")
	if len(th.Items) != 2 {
		t.Fatalf("history has %d items, want user + assistant:\n%s", len(th.Items), runtimetest.Transcript(th.Items))
	}
}

// clockModel advances a fake clock by step on every completion and always
// calls the synchronous echo tool, so only the deadline can stop the slice.
type clockModel struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *clockModel) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clockModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	c.mu.Lock()
	c.now = c.now.Add(c.step)
	c.mu.Unlock()
	w.ToolCall("", "echo", `{}`)
	return nil
}

// Invariant 7: reaching the deadline commits and enqueues a continuation,
// whether the deadline is the context's (a Lambda's) or the input's
// (SliceInput.Deadline): either less the margin.
func TestDeadlineEnqueuesContinuation(t *testing.T) {
	for _, viaInput := range []bool{false, true} {
		t.Run(fmt.Sprintf("input deadline %v", viaInput), func(t *testing.T) {
			store := local.NewHistoryStore()
			clock := &clockModel{now: time.Now(), step: 3 * time.Second}
			e, q := newEngine(store, clock)
			e.Now = clock.Now
			e.Limits.MaxCompletions = 100
			e.Limits.DeadlineMargin = 2 * time.Second
			ctx, in := context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}}
			if viaInput {
				in.Deadline = clock.Now().Add(10 * time.Second)
			} else {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, clock.Now().Add(10*time.Second))
				defer cancel()
			}
			res, err := e.RunSlice(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			// 3 s per completion, 8 s usable: completions at 0, 3, 6 s; then stop.
			if res.Completions != 3 || !res.Continued {
				t.Fatalf("completions %d continued %v, want 3 and true", res.Completions, res.Continued)
			}
			if len(q.msgs) != 1 || q.msgs[0].Kind != runtime.KindContinue {
				t.Fatalf("queued %+v, want one continuation", q.msgs)
			}
			th, _ := store.Load(context.Background(), "t")
			if len(th.Items) != 7 || len(th.State.Outbox) != 0 {
				t.Fatalf("after the slice: %d items, outbox %d", len(th.Items), len(th.State.Outbox))
			}
		})
	}
}

func TestClosedThreadDropsMessages(t *testing.T) {
	store := local.NewHistoryStore()
	err := store.Commit(context.Background(), &runtime.Commit{ThreadID: "t", Expected: 0,
		State: runtime.ThreadState{Version: 1, Closed: true, Stack: []string{"t"}}})
	if err != nil {
		t.Fatal(err)
	}
	counting := &runtimetest.CountingModel{Model: &model.Sim{Chunks: 1}}
	e, _ := newEngine(store, counting)
	res, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}})
	if err != nil || len(res.Dropped) != 1 || counting.Count("t") != 0 {
		t.Fatalf("res %+v err %v completions %d", res, err, counting.Count("t"))
	}
}

type recObserver struct {
	mu  sync.Mutex
	evs []runtime.Event
}

func (r *recObserver) Observe(ctx context.Context, ev runtime.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func TestObserverSeesTheSlice(t *testing.T) {
	store := local.NewHistoryStore()
	obs := &recObserver{}
	e, _ := newEngine(store, &model.Sim{Chunks: 1})
	e.Observer = obs
	res, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}})
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, ev := range obs.evs {
		if ev.ThreadID != "t" || (ev.Type != runtime.EventSliceStarted && ev.SliceID != res.ID()) {
			t.Fatalf("event without thread/slice: %+v", ev)
		}
		seq = append(seq, string(ev.Type))
	}
	if got := strings.Join(seq, ","); got != "slice_started,thread_loaded,completion_finished,turn_committed,turn_committed,slice_finished" {
		t.Fatalf("events %s", got)
	}
}

func TestRejectsMessageForOtherThread(t *testing.T) {
	e, _ := newEngine(local.NewHistoryStore(), &model.Sim{Chunks: 1})
	res, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("other", "u1")}})
	if err != nil || len(res.Rejected) != 1 || !strings.Contains(res.Rejected[0].Err.Error(), "thread_id") {
		t.Fatalf("res %+v err %v", res, err)
	}
}

// Invariant 5: a slice that finds an undispatched call sends it before
// anything else, even when its own message would interrupt that call.
func TestUndispatchedCallIsSentBeforeInterruption(t *testing.T) {
	store := local.NewHistoryStore()
	e, _ := newEngine(store, &model.Sim{Chunks: 1, Tool: "work", ToolArgs: `{}`})
	tool := &runtimetest.RecordingTool{FailNext: 1}
	e.Tools.(*runtime.Toolbox).MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "work"}, Async: tool})
	_, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}})
	if err == nil {
		t.Fatal("the failed dispatch did not fail the slice")
	}
	// The process "crashed" after the commit; a new message arrives.
	if _, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u2")}}); err != nil {
		t.Fatal(err)
	}
	calls := tool.Calls()
	if len(calls) < 2 || calls[0].CallID != calls[1].CallID {
		t.Fatalf("dispatches %+v: the recorded call was not re-sent with its ID before being interrupted", calls)
	}
	th, _ := store.Load(context.Background(), "t")
	if err := runtimetest.CheckOneResultPerCall(th.Items); err != nil {
		t.Fatal(err)
	}
}

// countingStore counts loads and commits.
type countingStore struct {
	runtime.HistoryStore
	loads, commits int
}

func (c *countingStore) Load(ctx context.Context, id string) (*runtime.Thread, error) {
	c.loads++
	return c.HistoryStore.Load(ctx, id)
}

func (c *countingStore) Commit(ctx context.Context, cm *runtime.Commit) error {
	c.commits++
	return c.HistoryStore.Commit(ctx, cm)
}

// With a dedup store, a slice is one read and one commit: "sent" is
// recorded with the dedup write, and the next slice clears the outbox
// without sending it again. Without the record, the next slice sends again
// with the same IDs, unless its own batch proves the call went out (the
// call's result is in it).
func TestOutboxSentRecordReplacesSecondCommit(t *testing.T) {
	cases := []struct {
		name           string
		lose           bool
		next           func(call string) runtime.Message
		wantDispatches int
	}{
		{"recorded, interrupted", false, func(string) runtime.Message { return userMsg("t", "u2") }, 1},
		{"record lost, interrupted", true, func(string) runtime.Message { return userMsg("t", "u2") }, 2},
		{"record lost, result proves dispatch", true, func(call string) runtime.Message {
			return runtime.Message{V: 1, ID: "r1", ThreadID: "t", Kind: runtime.KindToolResult, ToolCallID: call, Text: "done"}
		}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := &countingStore{HistoryStore: local.NewHistoryStore()}
			var dd runtime.DedupStore = local.NewDedupStore(time.Hour)
			if tc.lose {
				dd = forgetful{}
			}
			e, _ := newEngine(store, &model.Sim{Chunks: 1, Tool: "work", ToolArgs: `{}`})
			e.Dedup = dd
			tool := &runtimetest.RecordingTool{}
			e.Tools.(*runtime.Toolbox).MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "work"}, Async: tool})
			ctx := context.Background()
			if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}, FirstDelivery: true}); err != nil {
				t.Fatal(err)
			}
			if store.loads != 1 || store.commits != 1 {
				t.Fatalf("first slice: %d loads, %d commits; want 1 and 1", store.loads, store.commits)
			}
			call := tool.Calls()[0].CallID
			if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{tc.next(call)}, FirstDelivery: true}); err != nil {
				t.Fatal(err)
			}
			calls := tool.Calls()
			if len(calls) < tc.wantDispatches || calls[tc.wantDispatches-1].CallID != call {
				t.Fatalf("dispatches %+v, want the first %d of %s", calls, tc.wantDispatches, call)
			}
			if tc.wantDispatches == 1 && len(calls) > 1 && calls[1].CallID == call {
				t.Fatalf("call %s dispatched again: %+v", call, calls)
			}
			th, _ := store.HistoryStore.Load(ctx, "t")
			if err := runtimetest.CheckOneResultPerCall(th.Items); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// forgetful is a dedup store whose writes are lost.
type forgetful struct{}

func (forgetful) Seen(ctx context.Context, thread string, ids []string) ([]bool, error) {
	return make([]bool, len(ids)), nil
}
func (forgetful) Mark(ctx context.Context, thread string, ids []string) error { return nil }

type refusingOutput struct{ n int }

func (r *refusingOutput) Publish(ctx context.Context, ev runtime.OutputEvent) error {
	r.n++
	return runtime.Permanent(errors.New("event too large for the output queue"))
}

// An output event the output refuses for good is dropped (history keeps the
// reply); the slice does not fail, so the thread is not blocked by it.
func TestPermanentlyRefusedOutputDoesNotBlock(t *testing.T) {
	store := local.NewHistoryStore()
	e, _ := newEngine(store, &model.Sim{Chunks: 1})
	out := &refusingOutput{}
	e.Output = out
	res, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}})
	if err != nil || out.n != 1 {
		t.Fatalf("slice: %+v %v, publishes %d", res, err, out.n)
	}
	th, _ := store.Load(context.Background(), "t")
	if len(th.State.Outbox) != 0 || len(th.Items) != 2 {
		t.Fatalf("outbox %d items %d", len(th.State.Outbox), len(th.Items))
	}
}

// A redelivered batch whose every message the dedup store marks processed is
// acknowledged without loading the thread: the fast path.
func TestFullyMarkedRedeliverySkipsTheLoad(t *testing.T) {
	store := &countingStore{HistoryStore: local.NewHistoryStore()}
	e, _ := newEngine(store, &model.Sim{Chunks: 1})
	e.Dedup = local.NewDedupStore(time.Hour)
	ctx := context.Background()
	in := runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}, FirstDelivery: true}
	if _, err := e.RunSlice(ctx, in); err != nil {
		t.Fatal(err)
	}
	in.FirstDelivery = false
	res, err := e.RunSlice(ctx, in)
	if err != nil || len(res.Duplicates) != 1 || store.loads != 1 {
		t.Fatalf("redelivery: %+v %v, %d loads (want the first slice's only)", res, err, store.loads)
	}
}

// A redelivery the dedup store drops whole loads nothing, and its slice ID
// says so: it is not the ID of the slice that processed the message, even
// when that slice loaded version 1 (engine.go's screen derives the ID with
// version -1), so logs and events do not merge the two.
func TestDroppedRedeliveryHasItsOwnSliceID(t *testing.T) {
	store := local.NewHistoryStore()
	e, _ := newEngine(store, &model.Sim{Chunks: 1})
	e.Dedup = local.NewDedupStore(time.Hour)
	ctx := context.Background()
	if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u0")}, FirstDelivery: true}); err != nil {
		t.Fatal(err)
	}
	if th, err := store.Load(ctx, "t"); err != nil || th.State.Version != 1 {
		t.Fatalf("setup: after one slice the thread is at %v (%v), want version 1", th, err)
	}
	in := runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}, FirstDelivery: true}
	ran, err := e.RunSlice(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	ranID := ran.ID() // asked for before the next slice runs
	in.FirstDelivery = false
	dropped, err := e.RunSlice(ctx, in)
	if err != nil || len(dropped.Duplicates) != 1 {
		t.Fatalf("redelivery: %+v %v, want u1 dropped as a duplicate", dropped, err)
	}
	if dropped.ID() == ranID || !strings.HasPrefix(dropped.ID(), "slice_") {
		t.Fatalf("the dropped redelivery's slice ID %q, the slice that processed u1 %q: want another slice_ ID", dropped.ID(), ranID)
	}
}

// A slice that starts past its deadline still makes progress (one
// completion) before continuing, so continuations cannot loop without work.
func TestLateSliceStillMakesProgress(t *testing.T) {
	store := local.NewHistoryStore()
	clock := &clockModel{now: time.Now(), step: time.Second}
	e, q := newEngine(store, clock)
	e.Now = clock.Now
	res, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t",
		Messages: []runtime.Message{userMsg("t", "u1")}, Deadline: clock.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Completions != 1 || !res.Continued || len(q.msgs) != 1 {
		t.Fatalf("completions %d continued %v queued %d, want 1, true, 1", res.Completions, res.Continued, len(q.msgs))
	}
}

// flakySource fails to load the toolset while down is set, as a RAP loader
// does when its tool servers are unreachable.
type flakySource struct {
	tb   *runtime.Toolbox
	down bool
}

func (f *flakySource) Toolset(ctx context.Context, th *runtime.Thread) (runtime.Toolset, error) {
	if f.down {
		return nil, errors.New("tool server unreachable")
	}
	return f.tb, nil
}

// Invariant 5: a call recorded but not yet sent stays pending through a
// toolset outage: the slice fails and is retried, and the call is sent
// later with its ID. It must not be closed as "no longer available".
func TestToolsetOutageDoesNotCloseAnUndispatchedCall(t *testing.T) {
	store := local.NewHistoryStore()
	e, _ := newEngine(store, &model.Sim{Chunks: 1, Tool: "work", ToolArgs: `{}`})
	tool := &runtimetest.RecordingTool{FailNext: 1}
	tb := e.Tools.(*runtime.Toolbox)
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "work"}, Async: tool})
	src := &flakySource{tb: tb}
	e.Tools = src
	ctx := context.Background()
	in := runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}}
	if _, err := e.RunSlice(ctx, in); err == nil {
		t.Fatal("the failed dispatch did not fail the slice")
	}
	src.down = true
	if _, err := e.RunSlice(ctx, in); err == nil {
		t.Fatal("a slice that could not load its tools succeeded")
	}
	src.down = false
	if _, err := e.RunSlice(ctx, in); err != nil {
		t.Fatal(err)
	}
	calls := tool.Calls()
	if len(calls) != 2 || calls[0].CallID != calls[1].CallID {
		t.Fatalf("dispatches %+v, want the recorded call twice", calls)
	}
	th, _ := store.Load(ctx, "t")
	if th.State.Pending == nil || !th.State.Pending.Dispatched || th.State.Pending.ID != calls[0].CallID {
		t.Fatalf("pending %+v, want the call dispatched and still waiting for its result", th.State.Pending)
	}
}

// sentOnlyStore records each commit's SentOnly flag and what it carried.
type sentOnlyStore struct {
	runtime.HistoryStore
	commits []runtime.Commit
}

func (s *sentOnlyStore) Commit(ctx context.Context, c *runtime.Commit) error {
	s.commits = append(s.commits, *c)
	return s.HistoryStore.Commit(ctx, c)
}

// Without a dedup store, "sent" is a second commit, and only that one is
// marked SentOnly (a store may write it behind): it appends nothing,
// creates no thread and holds the call as dispatched with no outbox left.
func TestSecondCommitIsSentOnly(t *testing.T) {
	store := &sentOnlyStore{HistoryStore: local.NewHistoryStore()}
	e, _ := newEngine(store, &model.Sim{Chunks: 1, Tool: "work", ToolArgs: `{}`})
	tool := &runtimetest.RecordingTool{}
	e.Tools.(*runtime.Toolbox).MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "work"}, Async: tool})
	if _, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}}); err != nil {
		t.Fatal(err)
	}
	if len(store.commits) != 2 {
		t.Fatalf("%d commits, want the turn and the sent record", len(store.commits))
	}
	turn, sent := store.commits[0], store.commits[1]
	if turn.SentOnly || len(turn.Append) == 0 {
		t.Fatalf("the turn's commit: SentOnly %v with %d items", turn.SentOnly, len(turn.Append))
	}
	if !sent.SentOnly || len(sent.Append) != 0 || len(sent.Children) != 0 || len(sent.State.Outbox) != 0 ||
		sent.State.Pending == nil || !sent.State.Pending.Dispatched {
		t.Fatalf("the second commit: %+v, want SentOnly with the call dispatched and nothing else", sent)
	}
}

// filterObserver records the events it wants: only failed slice ends.
type filterObserver struct{ recObserver }

func (f *filterObserver) Wants(t runtime.EventType, failed bool) bool {
	return t == runtime.EventSliceFinished && failed
}

type failingStore struct{ runtime.HistoryStore }

func (failingStore) Commit(ctx context.Context, c *runtime.Commit) error {
	return errors.New("disk on fire")
}

func TestUnwantedEventsAreNotBuilt(t *testing.T) {
	clockReads := func(obs runtime.Observer, store runtime.HistoryStore) (int, []runtime.Event, error) {
		e, _ := newEngine(store, &model.Sim{Chunks: 1})
		e.Observer = obs
		reads := 0
		e.Now = func() time.Time { reads++; return time.Unix(1e9, 0) }
		_, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}})
		var evs []runtime.Event
		switch o := obs.(type) {
		case *recObserver:
			evs = o.evs
		case *filterObserver:
			evs = o.evs
		}
		return reads, evs, err
	}
	all, evs, err := clockReads(&recObserver{}, local.NewHistoryStore())
	if err != nil || len(evs) != 6 {
		t.Fatalf("unfiltered: %d events, %v", len(evs), err)
	}
	some, evs, err := clockReads(&filterObserver{}, local.NewHistoryStore())
	if err != nil || len(evs) != 0 {
		t.Fatalf("filtered: %d events, %v", len(evs), err)
	}
	// Not read: the slice's end, the start and end of the load and of
	// both commits (the turn, then the outbox sent). A completion's start
	// and end are read either way: history keeps its duration (Item.Took).
	if all-some != 7 {
		t.Fatalf("clock read %d times unfiltered, %d filtered; want 7 fewer", all, some)
	}
	// A wanted event still comes, with its duration.
	_, evs, err = clockReads(&filterObserver{}, failingStore{local.NewHistoryStore()})
	if err == nil || len(evs) != 1 || evs[0].Type != runtime.EventSliceFinished || evs[0].Err == nil {
		t.Fatalf("failed slice: events %+v, err %v", evs, err)
	}
}

func TestSlogObserverWantsWhatItLogs(t *testing.T) {
	o := runtime.SlogObserver{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	if o.Wants(runtime.EventSliceStarted, false) || o.Wants(runtime.EventCompletionFinished, false) {
		t.Fatal("debug events wanted at info level")
	}
	if !o.Wants(runtime.EventSliceFinished, true) || !o.Wants(runtime.EventMessageRejected, false) {
		t.Fatal("warnings not wanted at info level")
	}
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if !o.Wants(runtime.EventTurnCommitted, false) {
		t.Fatal("debug events not wanted at debug level")
	}
}

// askingModel records the ID and Turn of every request it gets.
type askingModel struct {
	ids   []string
	turns []int
}

func (m *askingModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	m.ids = append(m.ids, req.ID(), req.ID()) // twice: the second is the remembered one
	m.turns = append(m.turns, req.Turn())
	w.Text("ok")
	return nil
}

// The ID and Turn a model asks for are derived on demand, and are what the
// engine gave every request before: the same thread, version and
// completion give the same ID; Turn counts the completions in history.
func TestRequestIDAndTurnAreDerivedOnDemand(t *testing.T) {
	run := func() *askingModel {
		m := &askingModel{}
		e, _ := newEngine(local.NewHistoryStore(), m)
		for i, id := range []string{"u1", "u2", "u3"} {
			if _, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", id)}}); err != nil {
				t.Fatal(i, err)
			}
		}
		return m
	}
	a, b := run(), run()
	if !slices.Equal(a.turns, []int{0, 1, 2}) {
		t.Fatalf("turns %v, want 0 1 2", a.turns)
	}
	if !slices.Equal(a.ids, b.ids) {
		t.Fatalf("IDs differ between identical runs: %v, %v", a.ids, b.ids)
	}
	for i := 0; i < len(a.ids); i += 2 {
		if a.ids[i] != a.ids[i+1] || !strings.HasPrefix(a.ids[i], "cmpl_") || (i > 0 && a.ids[i] == a.ids[i-2]) {
			t.Fatalf("IDs %v: want one cmpl_ ID per completion, asked twice", a.ids)
		}
	}
	var req runtime.CompletionRequest
	if req.ID() != "" || req.Turn() != 0 {
		t.Fatalf("a request built outside the engine derives ID %q, turn %d", req.ID(), req.Turn())
	}
	req.SetID("c1")
	req.SetTurn(4)
	if req.ID() != "c1" || req.Turn() != 4 {
		t.Fatalf("set ID %q, turn %d", req.ID(), req.Turn())
	}
}

// A slice's ID is derived when asked for, from the thread, its version and
// the batch's message IDs, as it was when every slice derived it: a retried
// slice (same thread, version, batch) has the same ID, another batch
// another, and the events carry it.
func TestSliceIDIsDerivedOnDemand(t *testing.T) {
	run := func(ids ...string) (*runtime.SliceResult, []runtime.Event) {
		obs := &recObserver{}
		e, _ := newEngine(local.NewHistoryStore(), &model.Sim{Chunks: 1})
		e.Observer = obs
		var batch []runtime.Message
		for _, id := range ids {
			batch = append(batch, userMsg("t", id))
		}
		res, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: batch})
		if err != nil {
			t.Fatal(err)
		}
		clear(batch) // the caller may reuse its batch once RunSlice returns
		return res, obs.evs
	}
	one, evs := run("u1")
	three, _ := run("u1", "u2", "u3")
	again, _ := run("u1", "u2", "u3")
	if one.ID() == three.ID() || three.ID() != again.ID() || !strings.HasPrefix(one.ID(), "slice_") {
		t.Fatalf("slice IDs %q, %q, %q: want two equal for the same batch, another for another", one.ID(), three.ID(), again.ID())
	}
	for _, ev := range evs {
		if ev.SliceID != one.ID() {
			t.Fatalf("%s event has slice ID %q, the result %q", ev.Type, ev.SliceID, one.ID())
		}
	}
	var r runtime.SliceResult
	if r.ID() != "" {
		t.Fatalf("a result made outside the engine derives %q", r.ID())
	}
}
