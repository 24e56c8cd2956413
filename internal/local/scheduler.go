package local

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Scheduling
//
// A thread with mail is "ready": it sits, as a thread ID, in the ready
// queue of its class; no goroutine exists for it yet. At most
// SchedulerConfig.Slots slices run at once. When a slot is free the
// scheduler picks the next thread and runs it on a goroutine: the one whose
// thread just gave the slot back, or a new one when none did (a goroutine
// exits when nothing ready may run, so idle threads have none). When the
// slice ends the thread goes back to the end of its class's queue if it has
// more mail. One thread never runs twice at once and its mailbox
// is drained in arrival order, so per-thread FIFO is exactly what it was;
// priority only decides which thread runs next.
//
// Which class goes next: when only one class waits, that one. When both
// wait, interactive, except that background has a guaranteed share
// (SchedulerConfig.BackgroundShare, default 0.2) of these contested picks:
// every pick adds the share to a credit, and a credit of one buys
// background the pick (with 0.2, every fifth contested pick). The same
// rule orders the model calls waiting for a model's budget (see Budget).
//
// Why a guaranteed share and not aging: aging promotes a waiting
// background thread after a while, but a flood of ten thousand wake-ups
// ages all at once and then stands in front of every user for as long as
// the flood lasts. A share bounds both sides at all times: background
// starts at least one slice in 1/share contested picks however busy
// interactive work is (so it cannot starve, and a background thread's wait
// is bounded by the queue ahead of it, drained at no less than that rate),
// and an interactive thread waits for at most one background pick in
// 1/share before its own.

// SchedulerConfig configures how many slices run at once and in which
// order. The zero value is ready to use (see WithDefaults).
type SchedulerConfig struct {
	// Slots bounds the slices running at once. Default: the models'
	// configured concurrency (Budget.Concurrency) plus 4 per core, or,
	// when no budget gives a concurrency, 64 per core, or 512 per core
	// when the history store's commits wait for the disk (DiskWaiter).
	Slots int
	// BackgroundShare is the fraction of the picks background work gets
	// while both classes wait, for slots and for a model's budget alike.
	// Default 0.2.
	BackgroundShare float64
	// FIFO turns priorities off: threads run in the order they became
	// ready, whatever their class (for comparisons).
	FIFO bool
	// Budget, when set, bounds the calls to Config.Model (its concurrency
	// and tokens per minute); see Budget.
	Budget *Budget
}

// DiskWaiter is implemented by history stores whose Commit returns only
// once the commit is on disk, such as a group commit's fsync (internal/disk).
// Such a slice holds its slot while it waits and uses no CPU, and the more
// slices wait together, the more commits one fsync carries; so the default
// Slots is larger for them (512 per core instead of 64: on two cores, the
// durable density benchmark ran 12–20% more completions per second with
// 1,024 slots than with 128, and no faster with 2,048).
type DiskWaiter interface {
	CommitsWaitForDisk() bool
}

// WithDefaults returns c with zero fields set to their defaults.
func (c SchedulerConfig) WithDefaults() SchedulerConfig { return c.withDefaults(false) }

func (c SchedulerConfig) withDefaults(diskBound bool) SchedulerConfig {
	if c.Slots <= 0 {
		cores := goruntime.GOMAXPROCS(0)
		switch {
		case c.Budget != nil && c.Budget.Concurrency > 0:
			c.Slots = c.Budget.Concurrency + 4*cores
		case diskBound:
			c.Slots = 512 * cores
		default:
			c.Slots = 64 * cores
		}
	}
	if c.BackgroundShare == 0 {
		c.BackgroundShare = 0.2
	}
	return c
}

func (c SchedulerConfig) validate() error {
	if c.BackgroundShare <= 0 || c.BackgroundShare >= 1 {
		return fmt.Errorf("local: SchedulerConfig.BackgroundShare is %v; want a fraction in (0, 1)", c.BackgroundShare)
	}
	if c.Budget != nil {
		return c.Budget.validate()
	}
	return nil
}

// picker chooses between the two classes' queues by the guaranteed-share
// rule. It holds no lock; its owner does.
type picker struct {
	fifo     bool
	capacity int
	share    float64 // background's share of contested picks
	credit   float64 // background's credit; a pick costs 1
	running  [2]int
}

const (
	ci = 0 // index of interactive
	cb = 1 // index of background
)

func classIndex(c runtime.Class) int {
	if c.OrDefault() == runtime.ClassBackground {
		return cb
	}
	return ci
}

// next returns which class gets a free unit given which have waiters, or
// -1 when none may run now. With fifo, olderFirst says which waited longer.
// It changes nothing; took records the pick.
func (p *picker) next(waiting [2]bool, olderFirst int) int {
	if p.running[ci]+p.running[cb] >= p.capacity {
		return -1
	}
	switch {
	case !waiting[ci] && !waiting[cb]:
		return -1
	case !waiting[ci]:
		return cb
	case !waiting[cb]:
		return ci
	case p.fifo:
		return olderFirst
	case p.credit+p.share >= 1:
		return cb
	}
	return ci
}

// took records that class c got a unit; contested says both classes were
// waiting.
func (p *picker) took(c int, contested bool) {
	p.running[c]++
	if contested && !p.fifo {
		p.credit += p.share
		if c == cb {
			p.credit--
		}
	}
}

// ready is one thread waiting for a slot.
type ready struct {
	threadID string
	sh       *mailboxShard
	box      *mailbox
	seq      uint64
}

// fifoQueue is a queue that reuses its array as it drains.
type fifoQueue[T any] struct {
	items []T
	head  int
}

func (q *fifoQueue[T]) push(v T) { q.items = append(q.items, v) }
func (q *fifoQueue[T]) len() int { return len(q.items) - q.head }
func (q *fifoQueue[T]) peek() *T { return &q.items[q.head] }
func (q *fifoQueue[T]) pop() T {
	v := q.items[q.head]
	var zero T
	q.items[q.head] = zero
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.items) {
		q.items = append(q.items[:0:0], q.items[q.head:]...)
		q.head = 0
	}
	return v
}

// scheduler holds the ready queues. Its methods are called with the
// System's mutex held.
type scheduler struct {
	pick  picker
	queue [2]fifoQueue[ready]
	seq   uint64
	nwait [2]atomic.Int64 // entries in each class's queue, read without the lock
}

func newScheduler(c SchedulerConfig) *scheduler {
	return &scheduler{pick: picker{fifo: c.FIFO, capacity: c.Slots, share: c.BackgroundShare}}
}

// add makes a thread ready.
func (sc *scheduler) add(threadID string, sh *mailboxShard, box *mailbox) {
	sc.seq++
	sc.queue[box.class].push(ready{threadID: threadID, sh: sh, box: box, seq: sc.seq})
	sc.nwait[box.class].Add(1)
}

// take returns the next thread to run and takes a slot for it, or false.
func (sc *scheduler) take() (ready, bool) {
	waiting := [2]bool{sc.queue[ci].len() > 0, sc.queue[cb].len() > 0}
	older := ci
	if waiting[ci] && waiting[cb] && sc.queue[cb].peek().seq < sc.queue[ci].peek().seq {
		older = cb
	}
	c := sc.pick.next(waiting, older)
	if c < 0 {
		return ready{}, false
	}
	sc.pick.took(c, waiting[ci] && waiting[cb])
	sc.nwait[c].Add(-1)
	return sc.queue[c].pop(), true
}

// done gives back the slot of a slice of class c.
func (sc *scheduler) done(c int) { sc.pick.running[c]-- }

// maxBurst is how many slices in a row a thread with more mail may run
// while threads of its own class wait for a slot.
const maxBurst = 8

// shouldYield reports whether a running thread of class c that has run n
// slices in a row should give its slot back: at once when interactive
// threads wait and it is background, after maxBurst slices when anyone
// waits. It may be called without the lock (a stale answer only moves a
// yield by a slice).
func (sc *scheduler) shouldYield(c, n int) bool {
	in, bg := sc.nwait[ci].Load(), sc.nwait[cb].Load()
	return (c == cb && in > 0) || (n >= maxBurst && in+bg > 0)
}

// classKey carries the class of the running slice to the model's Budget.
type classKey struct{}

func withClass(ctx context.Context, c int) context.Context {
	return context.WithValue(ctx, classKey{}, c)
}

func classFrom(ctx context.Context) int {
	if c, ok := ctx.Value(classKey{}).(int); ok {
		return c
	}
	return ci
}
