package local

import "testing"

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
