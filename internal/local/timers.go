package local

import (
	"context"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Clock is what Timers arm their timers on: the time now and a function
// run once a duration has passed. RealClock (the time package) is the
// default; a test harness drives its own, so wake-ups fire when it says
// time has passed.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f in its own goroutine once d has passed (at once when
	// d <= 0), unless the returned timer is stopped first.
	AfterFunc(d time.Duration, f func()) Stopper
}

// Stopper is an armed timer of a Clock. Stop disarms it and reports
// whether that prevented f from running (false once f started or after
// an earlier Stop), as time.Timer.Stop does.
type Stopper interface{ Stop() bool }

// RealClock is the wall clock: time.Now and time.AfterFunc.
var RealClock Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Stopper { return time.AfterFunc(d, f) }

// Timers is the in-process runtime.Timers: one timer of its Clock per
// pending sleep, delivering the wake-up message through a queue. A thread
// that is not sleeping owns no timer.
type Timers struct {
	Queue runtime.Queue
	// Fired, when set, is called with each timer whose message Queue took
	// (the durable timers forget its row then).
	Fired func(tm runtime.Timer)
	clock Clock

	mu      sync.Mutex
	pending map[timerKey]Stopper
	stopped bool
	wg      sync.WaitGroup
}

type timerKey struct{ thread, call string }

// NewTimers returns timers on the wall clock that deliver to q.
func NewTimers(q runtime.Queue) *Timers { return NewTimersOn(q, nil) }

// NewTimersOn returns timers on clock c (nil: RealClock) that deliver to
// q. A timer is due at its At on c: it is armed for At - c.Now().
func NewTimersOn(q runtime.Queue, c Clock) *Timers {
	if c == nil {
		c = RealClock
	}
	return &Timers{Queue: q, clock: c, pending: map[timerKey]Stopper{}}
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
	// Armed under t.mu: f, which takes t.mu first, sees timer set even
	// when the clock runs it at once.
	var timer Stopper
	timer = t.clock.AfterFunc(tm.At.Sub(t.clock.Now()), func() {
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
