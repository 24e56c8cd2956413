package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// outageModel fails with a retryable error while down, then answers.
type outageModel struct {
	mu    sync.Mutex
	down  bool
	err   error
	calls int
}

func (m *outageModel) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.down {
		return m.err
	}
	w.Text("back")
	return nil
}

func (m *outageModel) set(down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = down
}

type retryAfterErr struct{ d time.Duration }

func (e retryAfterErr) Error() string             { return "HTTP 429: slow down" }
func (e retryAfterErr) RetryAfter() time.Duration { return e.d }

type waitRig struct {
	e      *runtime.Engine
	store  runtime.HistoryStore
	timers *recordTimers
	now    time.Time
}

func newWaitRig(m runtime.Model) *waitRig {
	r := &waitRig{store: local.NewHistoryStore(), timers: &recordTimers{}, now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	r.e, _ = newEngine(r.store, m)
	r.e.Limits.ModelAttempts = 2
	r.e.Now = func() time.Time { return r.now }
	r.e.ProviderWait = &runtime.ProviderWait{Timers: r.timers, First: time.Minute, Interval: 4 * time.Minute, MaxWait: time.Hour}
	return r
}

func (r *waitRig) run(t *testing.T, msgs ...runtime.Message) {
	t.Helper()
	if _, err := r.e.RunSlice(boundedContext(t), runtime.SliceInput{ThreadID: "t", Messages: msgs}); err != nil {
		t.Fatalf("slice failed (a provider outage must not fail it): %v", err)
	}
}

func (r *waitRig) state(t *testing.T) *runtime.Thread {
	t.Helper()
	th, err := r.store.Load(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// boundedContext is cancelled 10 s after the call or at the test's end.
// Not a deadline (the engine's clock is the rig's, not the wall's): a
// cancellation, which ends a retry loop that would not end on its own
// (it stops on a cancelled context), so that the test fails by assertion
// instead of hanging the package's tests. A slice here takes milliseconds.
func boundedContext(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(10*time.Second, cancel)
	t.Cleanup(func() { stop.Stop(); cancel() })
	return ctx
}

// fire delivers the latest timer's message at its time.
func (r *waitRig) fire(t *testing.T) runtime.Timer {
	t.Helper()
	tm := r.timers.last(t)
	r.now = tm.At
	r.run(t, tm.Message)
	return tm
}

// A provider outage: the slice succeeds, the user's message is committed,
// the thread waits through timers with a doubling delay, and the model
// runs again when the wait ends and answers once the provider is back.
func TestProviderOutageWaitsThroughTimers(t *testing.T) {
	m := &outageModel{down: true, err: errors.New("connection refused")}
	r := newWaitRig(m)
	r.run(t, userMsg("t", "u1"))
	th := r.state(t)
	if w := th.State.ModelWait; w == nil || w.Waits != 1 || !strings.Contains(w.Error, "connection refused") {
		t.Fatalf("state.ModelWait = %+v, want wait 1 with the provider's error", th.State.ModelWait)
	}
	if len(th.Items) != 1 || th.Items[0].Kind != runtime.ItemUser {
		t.Fatalf("history = %+v, want only the user's message (nothing of the failed turn)", th.Items)
	}
	var delays []time.Duration
	for i := 0; i < 3; i++ {
		before := r.now
		tm := r.fire(t)
		delays = append(delays, tm.At.Sub(before))
		if tm.Message.Kind != runtime.KindRetry {
			t.Fatalf("timer message kind %s, want retry", tm.Message.Kind)
		}
	}
	if want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute}; !equalDurations(delays, want) {
		t.Fatalf("waits %v, want %v (doubling from First)", delays, want)
	}
	// A duplicate of a retry already consumed does not run the model.
	calls := m.calls
	m.set(false)
	r.run(t, r.timers.timers[0].Message)
	if m.calls != calls {
		t.Fatalf("an old wait's retry ran the model")
	}
	r.fire(t)
	th = r.state(t)
	if th.State.ModelWait != nil {
		t.Fatalf("ModelWait still set after the provider came back: %+v", th.State.ModelWait)
	}
	last := th.Items[len(th.Items)-1]
	if last.Kind != runtime.ItemAssistant || last.Text != "back" {
		t.Fatalf("last item %+v, want the reply", last)
	}
	for _, it := range th.Items {
		if runtime.IsFailure(&it) {
			t.Fatalf("failure item after a recovered outage: %+v", it)
		}
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Retry-After longer than the backoff is honoured.
func TestProviderWaitHonoursRetryAfter(t *testing.T) {
	m := &outageModel{down: true, err: retryAfterErr{d: 7 * time.Minute}}
	r := newWaitRig(m)
	start := r.now
	r.run(t, userMsg("t", "u1"))
	if got := r.timers.last(t).At.Sub(start); got != 7*time.Minute {
		t.Fatalf("first wait %v, want the provider's Retry-After of 7m", got)
	}
	// A Retry-After as long as the first wait: no attempt is spent in the
	// slice after the first (the thread waits through the timers at once).
	if m.calls != 1 {
		t.Fatalf("model calls = %d, want 1 (a 429 with a long Retry-After goes straight to the wait)", m.calls)
	}
}

// A short Retry-After is retried in the slice, as any retryable error.
func TestShortRetryAfterRetriesInSlice(t *testing.T) {
	m := &outageModel{down: true, err: retryAfterErr{d: time.Millisecond}}
	r := newWaitRig(m)
	r.run(t, userMsg("t", "u1"))
	if m.calls != r.e.Limits.ModelAttempts {
		t.Fatalf("model calls = %d, want %d", m.calls, r.e.Limits.ModelAttempts)
	}
}

// Past MaxWait the completion fails for good: a failure item in history
// says what failed, with the provider's error, and the thread waits no
// more; a user message during a wait runs the model at once.
func TestProviderWaitGivesUpAtMaxWait(t *testing.T) {
	m := &outageModel{down: true, err: errors.New("HTTP 503: overloaded")}
	r := newWaitRig(m)
	r.run(t, userMsg("t", "u1"))
	for i := 0; i < 50 && r.state(t).State.ModelWait != nil; i++ {
		r.fire(t)
	}
	th := r.state(t)
	if th.State.ModelWait != nil {
		t.Fatal("still waiting after MaxWait")
	}
	last := th.Items[len(th.Items)-1]
	if !runtime.IsFailure(&last) || !strings.Contains(last.Text, "HTTP 503: overloaded") || !strings.Contains(last.Text, "waiting 1h0m0s") {
		t.Fatalf("last item %+v, want a failure item naming the error and the wait", last)
	}
	var args struct {
		Failed   string `json:"failed"`
		Attempts int    `json:"attempts"`
		Error    string `json:"error"`
	}
	if err := json.Unmarshal([]byte(last.Args), &args); err != nil || args.Failed != "completion" || args.Attempts != 2 || args.Error == "" {
		t.Fatalf("failure args %q (%v), want failed=completion, attempts=2, the error", last.Args, err)
	}
	// A user message after the failure runs the model again.
	m.set(false)
	r.run(t, userMsg("t", "u2"))
	if last := r.state(t).Items; last[len(last)-1].Text != "back" {
		t.Fatalf("no reply after a new message: %+v", last[len(last)-1])
	}
}

// A permanent error is a failure item at once, with the attempts made.
func TestPermanentModelErrorIsHistory(t *testing.T) {
	r := newWaitRig(&outageModel{down: true, err: runtime.Permanent(errors.New("HTTP 400: bad request"))})
	r.run(t, userMsg("t", "u1"))
	th := r.state(t)
	last := th.Items[len(th.Items)-1]
	if !runtime.IsFailure(&last) || !strings.Contains(last.Text, "HTTP 400: bad request") || th.State.ModelWait != nil {
		t.Fatalf("last item %+v (wait %+v), want a failure item and no wait", last, th.State.ModelWait)
	}
	if r.timers.count() != 0 {
		t.Fatal("a permanent error armed a wait")
	}
}

// Without a ProviderWait, a completion that failed every attempt fails the
// slice (its caller retries or dead-letters it), as before.
func TestNoProviderWaitFailsTheSlice(t *testing.T) {
	r := newWaitRig(&outageModel{down: true, err: errors.New("connection refused")})
	r.e.ProviderWait = nil
	if _, err := r.e.RunSlice(boundedContext(t), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}}); err == nil {
		t.Fatal("slice succeeded without a ProviderWait")
	}
}
