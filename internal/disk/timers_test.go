package disk

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// stepClock is a local.Clock that moves only when Advance says so and runs
// the timers that came due in the caller's goroutine.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*stepTimer
}

type stepTimer struct {
	c    *stepClock
	at   time.Time
	f    func()
	done bool // stopped or fired
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) AfterFunc(d time.Duration, f func()) local.Stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &stepTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *stepTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*stepTimer
	for _, t := range c.timers {
		if !t.done && !t.at.After(c.now) {
			t.done = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// The durable timers arm on the clock they are given, before and after a
// restart: a wake-up fires when that clock reaches its time (not the wall
// clock's), and once fired its row is gone.
func TestTimersOnTheirClockAcrossRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// Years from the wall clock: on time.Now the timer would fire at once.
	clock := &stepClock{now: time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)}
	d := open(t, dir)
	q := make(chanQueue, 4)
	tm := d.TimersOn(q, clock)
	wake := runtime.Timer{ThreadID: "t", CallID: "c1", At: clock.Now().Add(time.Hour),
		Message: runtime.Message{V: 1, ID: "wake-c1", ThreadID: "t", Kind: runtime.KindWake, ToolCallID: "c1"}}
	if err := tm.Schedule(ctx, wake); err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Minute)
	if len(q) != 0 {
		t.Fatal("the wake-up fired before its clock reached its time")
	}
	tm.Stop()
	d.Close()

	// Restarted on a clock still before the time: re-armed, not fired.
	d = open(t, dir)
	tm = d.TimersOn(q, clock)
	n, err := tm.Rearm(ctx)
	if err != nil || n.Sleeps != 1 {
		t.Fatalf("Rearm: %+v, %v; want the sleep", n, err)
	}
	if len(q) != 0 {
		t.Fatal("the re-armed wake-up fired before its time")
	}
	clock.Advance(time.Minute)
	if len(q) != 1 {
		t.Fatalf("%d wake-ups delivered at their time, want 1", len(q))
	}
	if m := <-q; m.ID != "wake-c1" {
		t.Fatalf("delivered %s, want wake-c1", m.ID)
	}
	tm.Stop()
	d.Close()

	d = open(t, dir)
	tm = d.TimersOn(q, clock)
	defer tm.Stop()
	if n, err := tm.Rearm(ctx); err != nil || n.Total() != 0 {
		t.Fatalf("Rearm after the wake-up fired: %+v, %v; want nothing", n, err)
	}
}
