package runtime_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

// statusTool is an asynchronous tool whose status answer the test sets.
type statusTool struct {
	mu        sync.Mutex
	status    runtime.CallStatus
	asked     int
	cancelled []string
	long      bool
	override  time.Duration
}

func (t *statusTool) Dispatch(context.Context, runtime.Invocation) error { return nil }

func (t *statusTool) CallStatus(context.Context, string, string) (runtime.CallStatus, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.asked++
	return t.status, nil
}

func (t *statusTool) Cancel(_ context.Context, _, callID string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cancelled = append(t.cancelled, callID)
	return nil
}

func (t *statusTool) CallDeadline() (time.Duration, bool) { return t.override, t.long }

func (t *statusTool) set(s runtime.CallStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.status = s
}

// recordTimers records scheduled timers instead of firing them; the test
// delivers their messages itself. (The real ones are tested in
// internal/local and internal/timers.)
type recordTimers struct {
	mu     sync.Mutex
	timers []runtime.Timer
}

func (r *recordTimers) Schedule(_ context.Context, t runtime.Timer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timers = append(r.timers, t)
	return nil
}

func (r *recordTimers) Cancel(context.Context, string, string) error { return nil }

func (r *recordTimers) last(t *testing.T) runtime.Timer {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.timers) == 0 {
		t.Fatal("no timer armed")
	}
	return r.timers[len(r.timers)-1]
}

func (r *recordTimers) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.timers)
}

// callingModel calls "work" after a user message and replies otherwise.
type callingModel struct{}

func (callingModel) Complete(_ context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	if last := req.History[len(req.History)-1]; last.Kind == runtime.ItemUser {
		w.ToolCall("", "work", `{}`)
		return nil
	}
	w.Text("noted")
	return nil
}

type livenessRig struct {
	e      *runtime.Engine
	store  runtime.HistoryStore
	tool   *statusTool
	timers *recordTimers
	now    time.Time
}

func newLivenessRig(t *testing.T, tool *statusTool) *livenessRig {
	r := &livenessRig{store: local.NewHistoryStore(), tool: tool, timers: &recordTimers{}, now: time.Unix(1_800_000_000, 0)}
	tb := runtime.NewToolbox()
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "work"}, Async: tool})
	r.e = &runtime.Engine{History: r.store, Queue: &sink{}, Model: callingModel{}, Tools: tb,
		Now:      func() time.Time { return r.now },
		Liveness: &runtime.Liveness{Timers: r.timers, Deadline: time.Hour, LongRunningDeadline: 48 * time.Hour, CheckAfter: 5 * time.Minute}}
	r.run(t, userMsg("t", "u1"))
	return r
}

func (r *livenessRig) run(t *testing.T, msgs ...runtime.Message) *runtime.SliceResult {
	t.Helper()
	res, err := r.e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rejected) > 0 {
		t.Fatalf("rejected: %+v", res.Rejected)
	}
	return res
}

func (r *livenessRig) thread(t *testing.T) *runtime.Thread {
	t.Helper()
	th, err := r.store.Load(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if err := runtimetest.CheckOneResultPerCall(th.Items); err != nil {
		t.Fatalf("%v\n%s", err, runtimetest.Transcript(th.Items))
	}
	return th
}

// fire advances the clock to the latest timer and delivers its message.
func (r *livenessRig) fire(t *testing.T) *runtime.SliceResult {
	t.Helper()
	tm := r.timers.last(t)
	r.now = tm.At
	return r.run(t, tm.Message)
}

func TestLivenessDeadCallGetsErrorResult(t *testing.T) {
	t.Parallel()
	r := newLivenessRig(t, &statusTool{status: runtime.StatusAlive})
	th := r.thread(t)
	p := th.State.Pending
	if p == nil || !p.Dispatched || !p.Deadline.Equal(r.now.Add(time.Hour)) {
		t.Fatalf("pending %+v, want a dispatched call with a deadline an hour away", p)
	}
	if tm := r.timers.last(t); !tm.At.Equal(r.now.Add(5*time.Minute)) || tm.Message.Kind != runtime.KindCheck || tm.Message.ToolCallID != p.ID {
		t.Fatalf("first check %+v", tm)
	}
	// Alive: nothing changes but the next check, twice as far away.
	first := r.timers.last(t).At
	r.fire(t)
	if th := r.thread(t); th.State.Pending == nil || r.timers.count() != 2 || !r.timers.last(t).At.Equal(first.Add(10*time.Minute)) {
		t.Fatalf("after an alive answer: pending %+v, %d timers, next at %v", th.State.Pending, r.timers.count(), r.timers.last(t).At)
	}
	// Unknown (5xx, unreachable): keep waiting.
	r.tool.set(runtime.StatusUnknown)
	r.fire(t)
	if th := r.thread(t); th.State.Pending == nil || r.timers.count() != 3 {
		t.Fatal("an unknown status must keep the call pending and check again")
	}
	// Dead: an error result the model reads, and the model goes on.
	r.tool.set(runtime.StatusDead)
	res := r.fire(t)
	th = r.thread(t)
	if th.State.Pending != nil || res.Completions != 1 {
		t.Fatalf("dead call still pending (%+v) or the model did not run (%d)", th.State.Pending, res.Completions)
	}
	tr := runtimetest.Transcript(th.Items)
	if !strings.Contains(tr, "no longer processing this call") || !strings.Contains(tr, "noted") {
		t.Fatalf("transcript:\n%s", tr)
	}
	// A late real result becomes a synthetic event; a late check is a no-op.
	late := runtime.Message{V: 1, ID: runtime.DeriveID("res_", "t", p.ID), ThreadID: "t", Kind: runtime.KindToolResult, ToolCallID: p.ID, Text: "finally"}
	r.run(t, late)
	r.run(t, runtime.Message{V: 1, ID: runtime.CheckID("t", p.ID, 9), ThreadID: "t", Kind: runtime.KindCheck, ToolCallID: p.ID, Text: "9"})
	th = r.thread(t)
	if tr := runtimetest.Transcript(th.Items); !strings.Contains(tr, runtime.InjectedToolName) || !strings.Contains(tr, "finally") {
		t.Fatalf("late result not injected:\n%s", tr)
	}
}

func TestLivenessDeadlineCancels(t *testing.T) {
	t.Parallel()
	r := newLivenessRig(t, &statusTool{status: runtime.StatusUnknown})
	deadline := r.thread(t).State.Pending.Deadline
	for i := 0; ; i++ {
		if i > 20 {
			t.Fatal("the deadline never fired")
		}
		if r.timers.last(t).At.After(deadline) {
			t.Fatalf("check armed after the deadline: %v > %v", r.timers.last(t).At, deadline)
		}
		r.fire(t)
		if r.thread(t).State.Pending == nil {
			break
		}
	}
	if !r.now.Equal(deadline) {
		t.Fatalf("closed at %v, want at the deadline %v", r.now, deadline)
	}
	tr := runtimetest.Transcript(r.thread(t).Items)
	if !strings.Contains(tr, "did not return before its deadline") || len(r.tool.cancelled) != 1 {
		t.Fatalf("cancelled %v, transcript:\n%s", r.tool.cancelled, tr)
	}
}

func TestLivenessDeadlines(t *testing.T) {
	t.Parallel()
	long := newLivenessRig(t, &statusTool{long: true})
	if p := long.thread(t).State.Pending; !p.Deadline.Equal(long.now.Add(48 * time.Hour)) {
		t.Fatalf("long-running deadline %v", p.Deadline)
	}
	over := newLivenessRig(t, &statusTool{long: true, override: 5 * time.Minute})
	if p := over.thread(t).State.Pending; !p.Deadline.Equal(over.now.Add(5 * time.Minute)) {
		t.Fatalf("per-server deadline %v", p.Deadline)
	}
	if at := over.timers.last(t).At; !at.Equal(over.now.Add(5 * time.Minute)) {
		t.Fatalf("first check at %v, want no later than the deadline", at)
	}
}

// TestRecheckThread: the start-up check finds a pending call and an active
// subscription whose server forgot them; both end so the model can go on.
func TestRecheckThread(t *testing.T) {
	t.Parallel()
	r := newLivenessRig(t, &statusTool{status: runtime.StatusAlive})
	p := r.thread(t).State.Pending
	// The call's result starts a subscription.
	r.run(t, runtime.Message{V: 1, ID: "res1", ThreadID: "t", Kind: runtime.KindToolResult, ToolCallID: p.ID, Text: "subscribed", Subscription: true})
	if subs := r.thread(t).State.Subscriptions; len(subs) != 1 {
		t.Fatalf("subscriptions %+v", subs)
	}
	q := &sink{}
	r.e.Queue = q
	if err := r.e.RecheckThread(context.Background(), "t", "boot1"); err != nil {
		t.Fatal(err)
	}
	if len(q.msgs) != 1 || q.msgs[0].Kind != runtime.KindCheck {
		t.Fatalf("sent %+v, want one check for the subscription", q.msgs)
	}
	r.run(t, q.msgs[0]) // alive: nothing happens
	if subs := r.thread(t).State.Subscriptions; len(subs) != 1 {
		t.Fatal("an alive subscription was dropped")
	}
	r.tool.set(runtime.StatusDead)
	q.msgs = nil
	if err := r.e.RecheckThread(context.Background(), "t", "boot2"); err != nil {
		t.Fatal(err)
	}
	res := r.run(t, q.msgs...)
	th := r.thread(t)
	if len(th.State.Subscriptions) != 0 || res.Completions != 1 {
		t.Fatalf("dead subscription kept (%+v) or model not run", th.State.Subscriptions)
	}
	if tr := runtimetest.Transcript(th.Items); !strings.Contains(tr, "no longer keeps this subscription") {
		t.Fatalf("transcript:\n%s", tr)
	}
}

// A pending call whose deadline was not committed (the dedup "sent" marker
// path) gets one at its first check, so it can still time out.
func TestLivenessDeadlineRecoveredAtFirstCheck(t *testing.T) {
	t.Parallel()
	r := newLivenessRig(t, &statusTool{status: runtime.StatusAlive})
	th := r.thread(t)
	st := th.State.Clone()
	st.Pending.Deadline = time.Time{}
	st.Version++
	if err := r.store.Commit(context.Background(), &runtime.Commit{ThreadID: "t", Expected: th.State.Version, State: st}); err != nil {
		t.Fatal(err)
	}
	r.fire(t)
	if p := r.thread(t).State.Pending; p == nil || !p.Deadline.Equal(r.now.Add(time.Hour)) {
		t.Fatalf("pending %+v, want a deadline an hour after the first check", p)
	}
}

// Sleeps (interruptible calls) get no deadline and no checks: a long sleep
// is not a stuck tool.
func TestLivenessSkipsSleeps(t *testing.T) {
	t.Parallel()
	timers := &recordTimers{}
	store := local.NewHistoryStore()
	tb := runtime.NewToolbox()
	for _, e := range runtime.SleepTools(timers, nil) {
		tb.MustAdd(e)
	}
	e := &runtime.Engine{History: store, Queue: &sink{}, Tools: tb, Liveness: &runtime.Liveness{Timers: timers},
		Model: modelFunc(func(w runtime.TurnWriter) { w.ToolCall("", "sleep", `{"seconds":7200}`) })}
	if _, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}}); err != nil {
		t.Fatal(err)
	}
	th, _ := store.Load(context.Background(), "t")
	if p := th.State.Pending; p == nil || !p.Deadline.IsZero() {
		t.Fatalf("pending sleep %+v, want no deadline", p)
	}
	for _, tm := range timers.timers {
		if tm.Message.Kind == runtime.KindCheck {
			t.Fatalf("a liveness check was armed for a sleep: %+v", tm)
		}
	}
	if timers.count() != 1 {
		t.Fatalf("%d timers, want the sleep's wake-up only", timers.count())
	}
}

type modelFunc func(w runtime.TurnWriter)

func (f modelFunc) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	f(w)
	return nil
}

// TestLivenessChecksCarryTheCallsTrace: the check of a pending call or a
// subscription carries the trace context its record kept (the dispatch
// span's); a record without one gives a check without one.
func TestLivenessChecksCarryTheCallsTrace(t *testing.T) {
	const (
		tp  = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		tp2 = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-01"
	)
	th := &runtime.Thread{ID: "t", State: runtime.ThreadState{Pending: &runtime.PendingCall{ID: "c1", Name: "hold", Dispatched: true, Trace: tp},
		Subscriptions: []runtime.Subscription{{CallID: "s1", Tool: "watch", Trace: tp2}, {CallID: "s2", Tool: "watch"}}}}
	msgs := runtime.LivenessChecks(th, "boot")
	if len(msgs) != 3 || msgs[0].ToolCallID != "c1" || msgs[0].Trace != tp || msgs[1].Trace != tp2 || msgs[2].Trace != "" {
		t.Fatalf("checks %+v: want the call's carrying %s, the subscriptions' %s and none", msgs, tp, tp2)
	}
	if err := msgs[0].Validate(); err != nil {
		t.Fatalf("the check does not validate: %v", err)
	}
}
