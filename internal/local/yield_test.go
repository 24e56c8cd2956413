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
