package chaos

import (
	"slices"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/local"
)

// runClock is the run's clock as the embedded and durable timers see it
// (local.Clock): Now is the run's time, and a timer armed on it never
// fires by itself, only when the run fires it (FireTimers, Timeline), so
// a run stays a pure function of its scenario and plan.
type runClock struct {
	now func() time.Time

	mu    sync.Mutex
	seq   int
	armed []*armedTimer // in the order they were armed
}

var _ local.Clock = (*runClock)(nil)

// armedTimer is one timer armed on a runClock.
type armedTimer struct {
	c   *runClock
	due time.Time
	seq int
	f   func()
}

func (c *runClock) Now() time.Time { return c.now() }

// AfterFunc arms f for d after the run's time; the run runs it.
func (c *runClock) AfterFunc(d time.Duration, f func()) local.Stopper {
	due := c.now().Add(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	a := &armedTimer{c: c, due: due, seq: c.seq, f: f}
	c.armed = append(c.armed, a)
	return a
}

// Stop disarms the timer; false once it fired or was stopped.
func (a *armedTimer) Stop() bool {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	n := len(a.c.armed)
	a.c.armed = slices.DeleteFunc(a.c.armed, func(b *armedTimer) bool { return b == a })
	return len(a.c.armed) < n
}

// takeAll disarms every armed timer and returns them in the order they
// were armed, for the caller to run (outside the lock: a timer's function
// sends its message, which on the embedded System may arm more).
func (c *runClock) takeAll() []*armedTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.armed
	c.armed = nil
	return out
}

// takeNext disarms and returns the armed timer due first (the one armed
// first among equal times).
func (c *runClock) takeNext() (*armedTimer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.armed) == 0 {
		return nil, false
	}
	best := 0
	for i, a := range c.armed {
		if a.due.Before(c.armed[best].due) {
			best = i
		}
	}
	a := c.armed[best]
	c.armed = slices.Delete(c.armed, best, best+1)
	return a, true
}

// pending returns how many timers are armed.
func (c *runClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.armed)
}
