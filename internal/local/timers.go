package local

import (
	"context"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Timers is the in-process runtime.Timers: one time.Timer per pending sleep,
// delivering the wake-up message through a queue. A thread that is not
// sleeping owns no timer.
type Timers struct {
	Queue runtime.Queue
	// Fired, when set, is called with each timer whose message Queue took
	// (the durable timers forget its row then).
	Fired func(tm runtime.Timer)
	now   func() time.Time

	mu      sync.Mutex
	pending map[timerKey]*time.Timer
	stopped bool
	wg      sync.WaitGroup
}

type timerKey struct{ thread, call string }

// NewTimers returns timers that deliver to q.
func NewTimers(q runtime.Queue) *Timers {
	return &Timers{Queue: q, now: time.Now, pending: map[timerKey]*time.Timer{}}
}

// Schedule arms a timer; scheduling the same (thread, call) again replaces
// the earlier one, so at most one wake-up is delivered per call.
func (t *Timers) Schedule(ctx context.Context, tm runtime.Timer) error {
	k := timerKey{tm.ThreadID, tm.CallID}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return context.Canceled
	}
	if old := t.pending[k]; old != nil && old.Stop() {
		t.wg.Done()
	}
	t.wg.Add(1)
	var timer *time.Timer
	timer = time.AfterFunc(tm.At.Sub(t.now()), func() {
		defer t.wg.Done()
		t.mu.Lock()
		if t.pending[k] == timer {
			delete(t.pending, k)
		}
		t.mu.Unlock()
		if err := t.Queue.Send(context.Background(), tm.Message); err == nil && t.Fired != nil {
			t.Fired(tm)
		}
	})
	t.pending[k] = timer
	return nil
}

// Cancel disarms the timer of (thread, call), if any.
func (t *Timers) Cancel(ctx context.Context, threadID, callID string) error {
	k := timerKey{threadID, callID}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.pending[k]; old != nil {
		delete(t.pending, k)
		if old.Stop() {
			t.wg.Done()
		}
	}
	return nil
}

// Pending returns the number of armed timers.
func (t *Timers) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// Stop disarms every timer and waits for callbacks already running. Safe to
// call twice.
func (t *Timers) Stop() {
	t.mu.Lock()
	t.stopped = true
	for k, tm := range t.pending {
		if tm.Stop() {
			t.wg.Done()
		}
		delete(t.pending, k)
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// OutputFunc adapts a function to runtime.Output.
type OutputFunc func(ctx context.Context, ev runtime.OutputEvent) error

// Publish calls f.
func (f OutputFunc) Publish(ctx context.Context, ev runtime.OutputEvent) error { return f(ctx, ev) }
