package local

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

type chanQueue chan runtime.Message

func (q chanQueue) Send(ctx context.Context, msgs ...runtime.Message) error {
	for _, m := range msgs {
		q <- m
	}
	return nil
}

func TestTimersDeliverCancelAndStop(t *testing.T) {
	q := make(chanQueue, 4)
	tm := NewTimers(q)
	defer stopTimersWithin(t, tm)
	wake := runtime.Message{V: 1, ID: "w1", ThreadID: "t", Kind: runtime.KindWake, ToolCallID: "c1"}
	if err := tm.Schedule(context.Background(), runtime.Timer{ThreadID: "t", CallID: "c1", At: time.Now(), Message: wake}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-q:
		if m.ID != "w1" {
			t.Fatalf("delivered %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a due timer did not fire")
	}
	// A far timer is armed until cancelled, then gone.
	far := runtime.Timer{ThreadID: "t", CallID: "c2", At: time.Now().Add(time.Hour), Message: wake}
	if err := tm.Schedule(context.Background(), far); err != nil {
		t.Fatal(err)
	}
	if err := tm.Schedule(context.Background(), far); err != nil { // same call again: replaces
		t.Fatal(err)
	}
	if n := tm.Pending(); n != 1 {
		t.Fatalf("%d timers armed, want 1", n)
	}
	if err := tm.Cancel(context.Background(), "t", "c2"); err != nil {
		t.Fatal(err)
	}
	if n := tm.Pending(); n != 0 {
		t.Fatalf("%d timers armed after cancel", n)
	}
	if err := tm.Schedule(context.Background(), far); err != nil {
		t.Fatal(err)
	}
	tm.Stop()
	tm.Stop()
	if n := tm.Pending(); n != 0 {
		t.Fatalf("%d timers armed after stop", n)
	}
	if err := tm.Schedule(context.Background(), far); err == nil {
		t.Fatal("schedule after stop accepted")
	}
}

// fakeClock is a Clock that moves only when Advance says so, running the
// timers that came due (in the order they were armed) in the caller's
// goroutine.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool // stopped or fired
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) Stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves the clock by d and runs every timer due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// armed returns how many timers are neither stopped nor fired.
func (c *fakeClock) armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

func TestTimersFollowTheirClock(t *testing.T) {
	ctx := context.Background()
	// Far from the wall clock: timers armed on time.Now would fire at
	// once (this time is past) or never, not when this clock says.
	clock := &fakeClock{now: time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)}
	q := make(chanQueue, 8)
	tm := NewTimersOn(q, clock)
	defer stopTimersWithin(t, tm)
	var fired []string
	tm.Fired = func(x runtime.Timer) { fired = append(fired, x.CallID) }
	wake := func(call string, in time.Duration) runtime.Timer {
		return runtime.Timer{ThreadID: "t", CallID: call, At: clock.Now().Add(in),
			Message: runtime.Message{V: 1, ID: "wake-" + call, ThreadID: "t", Kind: runtime.KindWake, ToolCallID: call}}
	}
	for _, w := range []runtime.Timer{wake("a", time.Hour), wake("b", 2*time.Hour), wake("gone", time.Minute)} {
		if err := tm.Schedule(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	// Scheduling a again replaces its timer: one wake-up, at the new time.
	if err := tm.Schedule(ctx, wake("a", 90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := tm.Cancel(ctx, "t", "gone"); err != nil {
		t.Fatal(err)
	}
	if n := clock.armed(); n != 2 {
		t.Fatalf("%d timers armed on the clock, want 2 (a replaced, gone cancelled)", n)
	}
	clock.Advance(time.Hour)
	if len(q) != 0 {
		t.Fatalf("%d wake-ups delivered an hour in; a was moved to 90 min and gone cancelled", len(q))
	}
	clock.Advance(30 * time.Minute)
	if len(q) != 1 {
		t.Fatalf("%d wake-ups delivered at 90 min, want a's", len(q))
	}
	if m := <-q; m.ID != "wake-a" {
		t.Fatalf("delivered %s at 90 min, want wake-a", m.ID)
	}
	if n := tm.Pending(); n != 1 {
		t.Fatalf("%d timers pending after a fired, want b's", n)
	}
	clock.Advance(30 * time.Minute)
	if len(q) != 1 {
		t.Fatalf("%d wake-ups delivered at 2 h, want b's", len(q))
	}
	if m := <-q; m.ID != "wake-b" {
		t.Fatalf("delivered %s at 2 h, want wake-b", m.ID)
	}
	if want := []string{"a", "b"}; !slices.Equal(fired, want) {
		t.Fatalf("Fired saw %v, want %v", fired, want)
	}
	// Stop disarms what the clock still holds.
	if err := tm.Schedule(ctx, wake("c", time.Minute)); err != nil {
		t.Fatal(err)
	}
	tm.Stop()
	if n := clock.armed(); n != 0 {
		t.Fatalf("%d timers left armed on the clock after Stop", n)
	}
	clock.Advance(time.Hour)
	if len(q) != 0 {
		t.Fatal("a timer fired after Stop")
	}
}

// stopTimersWithin stops tm, and fails the test if Stop has not returned
// within 10 s (a lock left held by a Schedule that panicked, say): the
// test then ends, and a panic on its way up crashes the binary, instead
// of both waiting for the test binary's timeout.
func stopTimersWithin(t *testing.T, tm *Timers) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tm.Stop()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("Timers.Stop did not return: a lock is held")
	}
}
