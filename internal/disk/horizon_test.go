package disk

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestTimersArmOnlyWithinTheHorizon: with a Horizon, 100 sleeps due
// every 10 s over 1,000 s hold in memory only the timers due within the
// horizon (plus the half horizon until the next read), each still fires
// when its clock reaches its time, never before and within one step of
// the clock after; a restart arms only the rows due soon and counts the
// others as later; and a sleep moved past the horizon is disarmed.
func TestTimersArmOnlyWithinTheHorizon(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &stepClock{now: t0}
	d := open(t, dir)
	q := make(chanQueue, 200)
	tm := d.TimersOn(q, clock)
	tm.Horizon = time.Minute
	if _, err := tm.Rearm(ctx); err != nil {
		t.Fatal(err)
	}
	due := map[string]time.Time{}
	sleep := func(tm *Timers, i int, at time.Time) {
		t.Helper()
		id := fmt.Sprintf("c%d", i)
		due["wake-"+id] = at
		if err := tm.Schedule(ctx, runtime.Timer{ThreadID: fmt.Sprint("t", i), CallID: id, At: at,
			Message: runtime.Message{V: 1, ID: "wake-" + id, ThreadID: fmt.Sprint("t", i), Kind: runtime.KindWake, ToolCallID: id}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 100; i++ {
		sleep(tm, i, t0.Add(time.Duration(i)*10*time.Second))
	}
	if n := tm.Pending(); n != 6 {
		t.Fatalf("%d timers armed, want the 6 due within the minute", n)
	}
	// Moved an hour on: past the horizon, disarmed (and fired at its new time).
	sleep(tm, 3, t0.Add(time.Hour))
	if n := tm.Pending(); n != 5 {
		t.Fatalf("%d timers armed after a sleep moved past the horizon, want 5", n)
	}
	fired := 0
	run := func(tm *Timers, until time.Time) {
		t.Helper()
		for clock.Now().Before(until) {
			clock.Advance(5 * time.Second)
			for len(q) > 0 {
				m := <-q
				at, now := due[m.ID], clock.Now()
				if at.After(now) || now.Sub(at) > 5*time.Second {
					t.Fatalf("%s due at +%v fired at +%v", m.ID, at.Sub(t0), now.Sub(t0))
				}
				delete(due, m.ID)
				fired++
			}
			if n := tm.Pending(); n > 10 {
				t.Fatalf("%d timers armed at +%v, want at most the 90 s ahead", n, clock.Now().Sub(t0))
			}
		}
	}
	run(tm, t0.Add(500*time.Second))
	if fired != 49 { // 10 s … 500 s, less the one moved
		t.Fatalf("%d wake-ups by +500 s, want 49", fired)
	}
	tm.Stop()
	d.Close()

	d = open(t, dir)
	defer d.Close()
	tm = d.TimersOn(q, clock)
	tm.Horizon = time.Minute
	n, err := tm.Rearm(ctx)
	if err != nil || n.Sleeps != 6 || n.Later != 45 {
		t.Fatalf("Rearm after a restart: %+v %v, want 6 sleeps due within the minute and 45 later", n, err)
	}
	defer tm.Stop()
	run(tm, t0.Add(3700*time.Second))
	if fired != 100 || len(due) != 0 {
		t.Fatalf("%d wake-ups in all, want 100; not fired: %v", fired, due)
	}
}

// TestSleepingThreadsNeedNoRecovery: a thread waiting on a built-in
// tool's dispatched call (a sleep, a child) is not among the pending
// calls a start reads (its wake-up is a timer row); one waiting on an
// external tool's is, and one with a call still to dispatch needs a
// slice. Before, every sleeping thread's state was read and decoded at
// each start: 5 s at 100,000 sleepers.
func TestSleepingThreadsNeedNoRecovery(t *testing.T) {
	d := openUnmanaged(t, t.TempDir())
	defer d.Close()
	h := d.History()
	for _, c := range []struct {
		id, tool   string
		dispatched bool
	}{{"sleeper", "sleep", true}, {"parent", "spawn_thread", true}, {"waiter", "lookup", true}, {"todo", "sleep", false}} {
		commitWith(t, h, c.id, func(st *runtime.ThreadState) {
			st.Pending = &runtime.PendingCall{ID: "c-" + c.id, Name: c.tool, Dispatched: c.dispatched}
		}, []runtime.Item{{Kind: runtime.ItemUser, At: 1, Text: "go"}})
	}
	calls, err := h.PendingCalls(context.Background())
	if err != nil || len(calls) != 1 || calls[0].ThreadID != "waiter" {
		t.Fatalf("pending calls %+v %v, want only the external tool's", calls, err)
	}
	kick, err := h.NeedAttention(context.Background())
	if err != nil || fmt.Sprint(kick) != "[todo]" {
		t.Fatalf("threads needing a slice %v %v, want [todo]", kick, err)
	}
}
