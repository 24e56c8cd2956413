package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The crash points this package adds around the engine's ports. A slice
// passes them in the wrappers below, not in the engine.
const (
	CrashBeforeTimerSchedule runtime.CrashPoint = "before_timer_schedule"
	CrashAfterTimerSchedule  runtime.CrashPoint = "after_timer_schedule"
	CrashBeforeTimerCancel   runtime.CrashPoint = "before_timer_cancel"
	CrashAfterTimerCancel    runtime.CrashPoint = "after_timer_cancel"
	CrashBeforeCommit        runtime.CrashPoint = "before_commit"
	CrashAfterPublish        runtime.CrashPoint = "after_publish"
	CrashBeforeDedupMark     runtime.CrashPoint = "before_dedup_mark"
	// Around the ledger of trees' budgets (Scenario.Ledger; budget.go).
	CrashAfterReserve      runtime.CrashPoint = "after_reserve"
	CrashBeforeSettle      runtime.CrashPoint = "before_settle"
	CrashAfterSettle       runtime.CrashPoint = "after_settle"
	CrashAfterBudgetChange runtime.CrashPoint = "after_budget_change"
)

// Points lists every crash point a run can stop at: the engine's and the
// wrappers'.
var Points = append(slices.Clone(runtime.CrashPoints),
	CrashBeforeTimerSchedule, CrashAfterTimerSchedule, CrashBeforeTimerCancel, CrashAfterTimerCancel,
	CrashBeforeCommit, CrashAfterPublish, CrashBeforeDedupMark,
	CrashAfterReserve, CrashBeforeSettle, CrashAfterSettle, CrashAfterBudgetChange)

// Site is one passage of a slice through a crash point.
type Site struct {
	Point  runtime.CrashPoint
	Thread string
}

func (s Site) String() string { return string(s.Point) + "@" + s.Thread }

// faults numbers every passage through a crash point in a run and acts on
// the one the plan names: crash there (once), or call a hook there.
type faults struct {
	mu      sync.Mutex
	crashAt int // passage to crash at; -1 for none
	again   int // passage of a second crash; -1 for none
	hookAt  int // passage to call hook at; -1 for none
	hook    func(Site)
	// target, when set, is where to crash instead of crashAt (system.go):
	// an address that depends neither on how concurrent threads
	// interleave nor on how the embedded System batches a thread's mail.
	target *Target
	// armed says the target's thread has started a slice whose batch
	// holds a message of the target's batch; counted is how many passages
	// of the target's site came since.
	armed   bool
	counted int
	// batches holds each thread's current batch (the message IDs of the
	// slice it runs, or ran last: batchTracer), and ordinals the passages
	// of each site in that slice so far; passages records, for each
	// passage, its slice's batch and its ordinal there.
	batches  map[string][]string
	ordinals map[Site]int
	passages []Target
	// begun holds the message IDs of every batch a slice started with,
	// and started is closed (and replaced) at each slice start, when a
	// split run waits for them (splitCloseNotices).
	begun   map[string]bool
	started chan struct{}
	sites   []Site
	fired   *Site // the (first) crash that happened, once it has
	second  *Site // the second crash, once it has
	inSlice bool  // a crash fired during the current slice
	first   bool  // crash at the next passage, whatever it is
}

// failFirst makes the slice about to run die at its first crash point.
func (f *faults) failFirst() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.first = true
}

// failFirstUnused forgets a failFirst the slice never used (it passed no
// crash point).
func (f *faults) failFirstUnused() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.first = false
}

func (f *faults) pass(p runtime.CrashPoint, thread string) bool {
	f.mu.Lock()
	n := len(f.sites)
	s := Site{p, thread}
	f.sites = append(f.sites, s)
	hook := n == f.hookAt && f.hook != nil
	crash := n == f.crashAt && f.fired == nil
	if f.ordinals != nil {
		f.passages = append(f.passages, Target{Site: s, Batch: f.batches[thread], Ordinal: f.ordinals[s]})
		f.ordinals[s]++
	}
	if f.target != nil {
		crash = false
		if f.armed && s == f.target.Site && f.fired == nil {
			crash = f.counted == f.target.Ordinal
			f.counted++
		}
	}
	if crash {
		f.fired = &s
		f.inSlice = true
	}
	if f.first {
		f.first = false
		crash = true
		f.inSlice = true
	}
	if n == f.again && f.fired != nil && f.second == nil {
		crash = true
		f.second = &s
		f.inSlice = true
	}
	f.mu.Unlock()
	if hook {
		f.hook(s) // outside the lock: the hook may run a whole slice
	}
	return crash
}

// state returns the passages so far and the crash that fired, if any.
func (f *faults) state() ([]Site, *Site) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sites), f.fired
}

// secondSite returns the second crash, once it has fired.
func (f *faults) secondSite() *Site {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.second
}

// takeCrash reports whether a crash fired since the last call.
func (f *faults) takeCrash() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.inSlice
	f.inSlice = false
	return c
}

// engineFaults adapts faults to runtime.FaultInjector.
type engineFaults struct{ f *faults }

func (e engineFaults) Crash(p runtime.CrashPoint, thread string) bool { return e.f.pass(p, thread) }

// crashed is the panic value of a wrapper that kills its slice.
type crashed struct{ site Site }

func (c crashed) String() string {
	return fmt.Sprintf("chaos: slice killed at %s: %v", c.site, runtime.ErrCrashed)
}

// point is called by the wrappers: it kills the slice when the plan says so.
func (f *faults) point(p runtime.CrashPoint, thread string) {
	if f.pass(p, thread) {
		panic(crashed{Site{p, thread}})
	}
}

// crashTimers wraps runtime.Timers with crash points before and after each
// call.
type crashTimers struct {
	inner runtime.Timers
	f     *faults
}

func (c crashTimers) Schedule(ctx context.Context, t runtime.Timer) error {
	c.f.point(CrashBeforeTimerSchedule, t.ThreadID)
	err := c.inner.Schedule(ctx, t)
	c.f.point(CrashAfterTimerSchedule, t.ThreadID)
	return err
}

func (c crashTimers) Cancel(ctx context.Context, thread, call string) error {
	c.f.point(CrashBeforeTimerCancel, thread)
	err := c.inner.Cancel(ctx, thread, call)
	c.f.point(CrashAfterTimerCancel, thread)
	return err
}

// crashHistory crashes before each commit.
type crashHistory struct {
	runtime.HistoryStore
	f *faults
}

func (c crashHistory) Commit(ctx context.Context, cm *runtime.Commit) error {
	c.f.point(CrashBeforeCommit, cm.ThreadID)
	return c.HistoryStore.Commit(ctx, cm)
}

// crashDedup crashes before each dedup write (the engine treats a failed
// write as harmless, so only a crash stops the slice there).
type crashDedup struct {
	runtime.DedupStore
	f *faults
}

func (c crashDedup) Mark(ctx context.Context, thread string, ids []string) error {
	c.f.point(CrashBeforeDedupMark, thread)
	return c.DedupStore.Mark(ctx, thread, ids)
}

// crashOutput crashes after each publish.
type crashOutput struct {
	inner runtime.Output
	f     *faults
}

func (c crashOutput) Publish(ctx context.Context, ev runtime.OutputEvent) error {
	err := c.inner.Publish(ctx, ev)
	c.f.point(CrashAfterPublish, ev.ThreadID)
	return err
}
