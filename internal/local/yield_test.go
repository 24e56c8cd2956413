package local

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// A slice yields to waiting work after maxBurst slices in a row, and a
// background one as soon as an interactive thread waits.
func TestShouldYield(t *testing.T) {
	sc := newScheduler(SchedulerConfig{Slots: 1})
	if sc.shouldYield(ci, maxBurst) || sc.shouldYield(cb, maxBurst) {
		t.Fatal("yields with nothing waiting")
	}
	sc.nwait[cb].Add(1)
	if sc.shouldYield(ci, maxBurst-1) || !sc.shouldYield(ci, maxBurst) || sc.shouldYield(cb, 1) {
		t.Fatal("with a background thread waiting: want a yield after exactly maxBurst slices")
	}
	sc.nwait[ci].Add(1)
	if !sc.shouldYield(cb, 1) || sc.shouldYield(ci, 1) {
		t.Fatal("with an interactive thread waiting: want background to yield at once, interactive not")
	}
}

// A thread taken from the ready queue no longer counts as waiting: once
// the only queued threads are taken, a running thread is not made to
// yield after its burst, and a background one not at once.
func TestTakenThreadsNoLongerWait(t *testing.T) {
	sc := newScheduler(SchedulerConfig{Slots: 2})
	sc.add("i1", nil, &mailbox{class: ci})
	sc.add("b1", nil, &mailbox{class: cb})
	if !sc.shouldYield(ci, maxBurst) {
		t.Fatal("two threads queued: want a yield after maxBurst slices")
	}
	for range 2 {
		if _, ok := sc.take(); !ok {
			t.Fatal("a queued thread was not taken with a slot free")
		}
	}
	if sc.shouldYield(ci, maxBurst) || sc.shouldYield(cb, 1) {
		t.Fatal("every queued thread was taken: nothing waits, want no yield")
	}
}

// A thread that yields its slot with nothing left in its mailbox is done,
// not queued again: a message that reaches it later queues it behind the
// threads that became ready before that message. (Requeued, it kept a
// place in the ready queue it had no work for, and its later message
// jumped the queue.)
func TestYieldWithNothingLeftGivesUpTheQueuePlace(t *testing.T) {
	m := &orderModel{inner: &model.Sim{Chunks: 1}, hold: make(chan struct{}), entered: make(chan struct{})}
	var h *harness
	var once sync.Once
	// While the interactive thread runs, y and then x become ready again,
	// in that order.
	m.onCall = func(thread string) {
		if thread != "i" {
			return
		}
		once.Do(func() {
			for _, msg := range []runtime.Message{classed("y", "y1", runtime.ClassBackground), classed("x", "x2", runtime.ClassBackground)} {
				if err := h.sys.Send(context.Background(), msg); err != nil {
					t.Error(err)
				}
			}
		})
	}
	h = newHarness(t, m, func(c *Config) { c.Scheduler = SchedulerConfig{Slots: 1} })
	h.send(classed("x", "x1", runtime.ClassBackground))
	<-m.entered
	// An interactive thread waits, so x yields at the end of its slice,
	// with nothing left to do.
	h.send(classed("i", "i1", runtime.ClassInteractive))
	close(m.hold)
	h.wait()
	if got, want := m.calls(), []string{"x", "i", "y", "x"}; !slices.Equal(got, want) {
		t.Fatalf("completions ran in order %v, want %v (x's second message came after y's)", got, want)
	}
}
