package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Clock is the fixed time every run sees.
var Clock = time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)

// Backend is the pair of stores a run writes to. Each run needs empty
// stores (or stores no other run uses).
type Backend struct {
	History runtime.HistoryStore
	Dedup   runtime.DedupStore // optional
	// Restart, when set, is called after every crash of a slice the driver
	// runs (not in the embedded System's modes), before the run goes on: a
	// store that keeps state in memory loses it there, as its process
	// would (the disk store reopens its files as the crash left them, so
	// recovery replays its journal).
	Restart func() error
	// Recover, when set, names the threads a restart leaves with work to
	// do (an outbox whose sent record the crash lost, a call not yet
	// dispatched): serve's recovery kicks each with a slice of no
	// messages (disk.History.NeedAttention, System.Kick), and after every
	// Restart the driver does the same.
	Recover func(ctx context.Context) ([]string, error)
	// Timers, when set, builds the run's timers (the backend's durable
	// ones), delivering to q and armed on c, the run's clock; default the
	// embedded local.Timers on c.
	Timers func(q runtime.Queue, c local.Clock) runtime.Timers
	// Ledger, when set, is the backend's ledger of trees' budgets, used
	// by the scenarios with Scenario.Ledger; default a memory ledger of
	// the run's.
	Ledger Ledger
}

// Ledger is a runtime.Ledger that shows a tree's account.
type Ledger interface {
	runtime.Ledger
	Account(ctx context.Context, tree string) (runtime.Account, error)
}

// Plan says how a run is disturbed. The zero Plan is the crash-free,
// single-delivery run; use NoCrash for CrashAt and HookAt.
type Plan struct {
	// CrashAt is the passage (counted from 0 over every crash point any slice
	// of the run passes, in order) where the run's one crash happens; -1 for
	// none.
	CrashAt int
	// CrashAgain, when above 0, kills the run a second time, that many
	// passages after the first crash (usually in the slice that recovers).
	CrashAgain int
	// HookAt is the passage where Hook is called (the slice then goes on);
	// -1 for none.
	HookAt int
	Hook   func(r *Run, s Site)
	// AllowConflicts makes a slice that fails with runtime.ErrConflict
	// expected (a racing duplicate slice) rather than a problem.
	AllowConflicts bool
	// Duplicates, when set, delivers every message again later.
	Duplicates *Duplicates
	// MaxBatch caps the messages of one slice, as an SQS batch does
	// (default 10).
	MaxBatch int
	// HoldCrashed keeps a batch whose slice was killed after committing
	// invisible until more mail reaches its thread (the next step's input,
	// a child's report, a tool's answer) or the system goes quiet, and
	// then redelivers it together with that mail, as an SQS FIFO group
	// does once the visibility timeout expires.
	HoldCrashed bool
	// DeadLetterAfter, when above 0, makes a batch whose slice was killed
	// after committing fail every later receive (at its first crash point)
	// until it was received that many times; it then goes to the
	// dead-letter queue and the thread goes on with its next message, a
	// first delivery. Once the system is quiet (or an input needs the lost
	// work), the dead letters are redriven as new messages.
	DeadLetterAfter int
	// OneByOne says MaxBatch is 1 on purpose, to make batches that differ
	// from the reference's (SupersetRaces): the run is held to the End's
	// structural checks and the invariants.
	OneByOne bool
}

// relaxed says the plan changes how messages are batched, so a run is held
// to the scenario's End and the invariants, not to the reference's
// snapshot (two messages in one batch may get one reply instead of two).
func (p Plan) relaxed() bool { return p.HoldCrashed || p.DeadLetterAfter > 0 || p.OneByOne }

// NoCrash is the CrashAt and HookAt of a run that has none.
const NoCrash = -1

// CrashFree is the plan of a reference run.
func CrashFree() Plan { return Plan{CrashAt: NoCrash, HookAt: NoCrash} }

// Duplicates makes every message arrive 2–3 times: each copy comes 1 to
// MaxDelay slices after the original (so usually after later messages) or,
// when the system went quiet first, with the next outside input or at the
// end. Some copies look like SQS redeliveries of the same message, the rest
// like a sender's retry (a new message with the same ID).
type Duplicates struct {
	Seed     uint64
	MaxDelay int
}

// delivery is one copy of a message in a mailbox. receives counts how often
// this copy was handed to a slice, like SQS's ApproximateReceiveCount.
type delivery struct {
	msg      runtime.Message
	receives int
}

type delayed struct {
	due int
	d   delivery
}

// Run plays one scenario under one plan. Its methods are what scenario
// steps use to act as the outside world.
type Run struct {
	sc      *Scenario
	plan    Plan
	store   *recordingStore
	dedup   runtime.DedupStore
	timers  *recordedTimers
	clk     *runClock // what the timers are armed on
	out     *outputs
	f       *faults
	model   *shownModel // the scripted model, recording what each completion was shown
	toolbox func(runtime.Timers) *runtime.Toolbox
	engine  *runtime.Engine
	send    func(ctx context.Context, msgs ...runtime.Message) error
	restart func() error                                // Backend.Restart
	recover func(ctx context.Context) ([]string, error) // Backend.Recover
	ledger  Ledger                                      // Scenario.Ledger: the trees' budgets, kept across crashes

	// driver state (one slice at a time)
	boxes     map[string][]delivery
	kicked    map[string]bool // threads to run a slice of no messages for (Backend.Recover)
	ready     []string
	inReady   map[string]bool
	later     []delayed
	rng       *rand.Rand
	step      int
	failures  map[string]int
	delivered map[string]bool            // message IDs handed to a slice at least once
	current   runtime.SliceInput         // the batch of the slice running now
	previous  map[string]runtime.Message // per thread, the last message of the batch before current
	lastOf    map[string]runtime.Message // per thread, the last message handed to a slice
	held      map[string]bool            // threads whose crashed batch waits for more mail (HoldCrashed)
	poisoned  map[string]bool            // message IDs whose every receive fails (DeadLetterAfter)
	dlq       []delivery                 // dead-lettered, not redriven yet
	// settle runs the system until no thread has mail (the driver's drain;
	// on the embedded System, until it is idle).
	settle func(ctx context.Context) error

	mu         sync.Mutex
	clock      time.Time         // what engines and tools read as now; moved by Timeline only
	sentOrder  []runtime.Message // every distinct message sent, first copy, in order (meaning)
	sentIDs    map[string]bool
	dispatches []runtime.Invocation
	dead       map[string]string
	problems   []string
	slices     int
	crashes    int
	conflicts  int // slices that lost a race
	resends    int // copies of a message delivered after the first
	merges     int // held batches redelivered together with newer mail
	deadMoves  int // batches moved to the dead-letter queue
	redriven   int // dead letters redriven
	kicks      int // threads kicked after a restart (Backend.Recover)
}

// newRun builds a run's ports around the backend.
func newRun(sc *Scenario, b Backend, plan Plan) *Run {
	if plan.MaxBatch <= 0 {
		plan.MaxBatch = 10
	}
	r := &Run{sc: sc, plan: plan, store: newRecordingStore(b.History), dedup: b.Dedup, restart: b.Restart, recover: b.Recover, timers: newRecordedTimers(),
		out: &outputs{}, f: &faults{crashAt: plan.CrashAt, again: NoCrash, hookAt: plan.HookAt},
		model: newShownModel(model.NewScripted(sc.Script)), boxes: map[string][]delivery{}, kicked: map[string]bool{}, inReady: map[string]bool{},
		failures: map[string]int{}, delivered: map[string]bool{}, dead: map[string]string{},
		held: map[string]bool{}, poisoned: map[string]bool{}, sentIDs: map[string]bool{}, clock: Clock,
		previous: map[string]runtime.Message{}, lastOf: map[string]runtime.Message{}}
	r.settle = func(ctx context.Context) error { r.drain(ctx, false); return nil }
	r.clk = &runClock{now: r.now}
	if b.Timers != nil {
		r.timers.inner = b.Timers(timerQueue{r}, r.clk)
	} else {
		r.timers.inner = local.NewTimersOn(timerQueue{r}, r.clk)
	}
	if sc.NoDedup {
		r.dedup = nil
	}
	if sc.Ledger {
		r.ledger = b.Ledger
		if r.ledger == nil {
			r.ledger = local.NewLedger()
		}
	}
	if plan.CrashAgain > 0 && plan.CrashAt >= 0 {
		r.f.again = plan.CrashAt + plan.CrashAgain
	}
	if plan.Hook != nil {
		r.f.hook = func(s Site) { plan.Hook(r, s) }
	}
	if d := plan.Duplicates; d != nil {
		r.rng = rand.New(rand.NewPCG(d.Seed, 0x5eed))
	}
	run := &asyncTool{run: r, reply: true}
	work := &asyncTool{run: r}
	echo := syncFunc(func(ctx context.Context, env *runtime.SyncEnv, inv runtime.Invocation) (runtime.ToolOutput, error) {
		return runtime.ToolOutput{Text: "echo " + inv.Args}, nil
	})
	r.toolbox = func(timers runtime.Timers) *runtime.Toolbox {
		tb := runtime.NewToolbox()
		tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "run_command", Description: "Runs a command; answers at once."}, Async: run})
		tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "work", Description: "Long work; answered by the scenario."}, Async: work})
		tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "echo", Description: "Synchronous echo."}, Sync: echo})
		for _, e := range runtime.ThreadTools() {
			tb.MustAdd(e)
		}
		for _, e := range runtime.SleepTools(timers, r.now) {
			e.Async = recordedTool{inner: e.Async, run: r}
			tb.MustAdd(e)
		}
		if sc.Wedged != "" {
			tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: sc.Wedged, Description: "Never answers; says it is alive."},
				Async: &wedgedTool{asyncTool{run: r}}})
		}
		return tb
	}
	r.engine = r.newEngine(r.f)
	r.send = r.enqueue
	return r
}

// newEngine returns an engine on the run's stores whose crash points are
// numbered by f. Every engine of a run shares its stores, queue and tools.
func (r *Run) newEngine(f *faults) *runtime.Engine {
	e := &runtime.Engine{
		History:    slicedStore(crashHistory{HistoryStore: r.store, f: f}, r.store.HistoryStore),
		Queue:      runQueue{r},
		Output:     crashOutput{inner: r.out, f: f},
		Model:      r.model,
		Tools:      r.toolbox(crashTimers{inner: r.timers, f: f}),
		Limits:     r.sc.Limits,
		Compaction: r.sc.Compaction,
		Now:        r.now,
		Faults:     engineFaults{f},
		Entropy:    runtime.FixedEntropy, // every run of a scenario issues the same IDs
	}
	if l := r.sc.Liveness; l != nil {
		ll := *l
		ll.Timers = crashTimers{inner: r.timers, f: f}
		e.Liveness = &ll
	}
	if e.Limits.RetryBase == 0 {
		e.Limits.RetryBase = time.Millisecond
	}
	if r.dedup != nil {
		e.Dedup = crashDedup{DedupStore: r.dedup, f: f}
	}
	if r.ledger != nil {
		e.Budgets = &runtime.Budgets{Ledger: crashLedger{inner: r.ledger, f: f}, DefaultMaxOutputTokens: budgetMaxOutput}
	}
	return e
}

// DuplicateEngine returns a second engine on the run's stores with no
// faults, to race a duplicate slice against the run's own.
func (r *Run) DuplicateEngine() *runtime.Engine {
	return r.newEngine(&faults{crashAt: NoCrash, again: NoCrash, hookAt: NoCrash})
}

// runQueue is the queue engines and tools send to.
type runQueue struct{ r *Run }

func (q runQueue) Send(ctx context.Context, msgs ...runtime.Message) error {
	return q.r.Send(ctx, msgs...)
}

// Send delivers messages to threads, as the input queue does.
func (r *Run) Send(ctx context.Context, msgs ...runtime.Message) error {
	for i := range msgs {
		if msgs[i].V == 0 {
			msgs[i].V = runtime.MessageVersion
		}
		if err := msgs[i].Validate(); err != nil {
			return err
		}
	}
	r.mu.Lock()
	for _, m := range msgs {
		if !r.sentIDs[m.ID] {
			r.sentIDs[m.ID] = true
			r.sentOrder = append(r.sentOrder, m)
		}
	}
	r.mu.Unlock()
	return r.send(ctx, msgs...)
}

func (r *Run) enqueue(ctx context.Context, msgs ...runtime.Message) error {
	for _, m := range msgs {
		r.put(delivery{msg: m})
		if r.rng == nil {
			continue
		}
		for range 1 + r.rng.IntN(2) {
			d := delivery{msg: m}
			if r.rng.IntN(2) == 0 {
				d.receives = 1 // an SQS redelivery of the same message
			}
			r.later = append(r.later, delayed{due: r.step + 1 + r.rng.IntN(r.plan.Duplicates.MaxDelay), d: d})
		}
	}
	return nil
}

func (r *Run) put(d delivery) {
	th := d.msg.ThreadID
	r.boxes[th] = append(r.boxes[th], d)
	if r.held[th] {
		// The held batch comes back together with this mail.
		r.held[th] = false
		r.merges++
	}
	r.wake(th)
}

func (r *Run) wake(th string) {
	if !r.inReady[th] && !r.held[th] && (len(r.boxes[th]) > 0 || r.kicked[th]) {
		r.inReady[th] = true
		r.ready = append(r.ready, th)
	}
}

// release delivers the delayed copies that are due (all of them when all
// is set).
func (r *Run) release(all bool) {
	keep := r.later[:0]
	var due []delayed
	for _, d := range r.later {
		if all || d.due <= r.step {
			due = append(due, d)
		} else {
			keep = append(keep, d)
		}
	}
	r.later = keep
	for _, d := range due {
		r.put(d.d)
	}
}

// maxFailures bounds the consecutive failed slices of one thread before the
// run gives up on it (a stuck thread is a problem, not a hang).
const maxFailures = 8

// maxSteps bounds the slices of one run: a run that never goes quiet (a
// thread that keeps sending itself work) is a problem, not a hang.
const maxSteps = 2000

// drain runs slices, one at a time, round-robin over threads with mail,
// until no thread has any. With final set, delayed copies are delivered
// first.
func (r *Run) drain(ctx context.Context, final bool) {
	for {
		if r.step >= maxSteps {
			if r.step == maxSteps {
				r.problem("liveness: the run did not go quiet after %d slices", maxSteps)
				r.step++
			}
			return
		}
		if len(r.ready) == 0 {
			if final && len(r.later) > 0 {
				r.release(true)
				continue
			}
			if final && r.releaseHeld() {
				continue
			}
			return
		}
		th := r.ready[0]
		r.ready = r.ready[1:]
		r.inReady[th] = false
		box := r.boxes[th]
		n := min(len(box), r.plan.MaxBatch)
		if p := r.poisonedHead(box); p > 0 {
			n = p // a failing batch is received alone until it is dead-lettered
		}
		batch := slices.Clone(box[:n])
		r.boxes[th] = box[n:]
		r.kicked[th] = false // a batch does what a kick would
		first := true
		msgs := make([]runtime.Message, n)
		for i := range batch {
			if batch[i].receives > 0 || r.delivered[batch[i].msg.ID] {
				r.resends++
			}
			r.delivered[batch[i].msg.ID] = true
			first = first && batch[i].receives == 0
			batch[i].receives++
			msgs[i] = batch[i].msg
		}
		r.slice(ctx, th, batch, msgs, first)
		r.step++
		r.release(false)
		r.wake(th)
	}
}

func (r *Run) slice(ctx context.Context, th string, batch []delivery, msgs []runtime.Message, first bool) {
	r.f.takeCrash()
	if last, ok := r.lastOf[th]; ok {
		r.previous[th] = last
	}
	r.current = runtime.SliceInput{ThreadID: th, Messages: msgs}
	if len(msgs) > 0 {
		r.lastOf[th] = msgs[len(msgs)-1]
	}
	poisoned := r.poisonedHead(batch) > 0
	if poisoned {
		r.f.failFirst()
	}
	commits := r.store.commitCount()
	res, err := r.runSlice(ctx, runtime.SliceInput{ThreadID: th, Messages: msgs, FirstDelivery: first})
	r.f.failFirstUnused()
	committed := r.store.commitCount() > commits
	r.mu.Lock()
	r.slices++
	r.mu.Unlock()
	if res != nil {
		for _, rej := range res.Rejected {
			r.deadLetter(rej.ID, rej.Err.Error())
			batch = slices.DeleteFunc(batch, func(d delivery) bool { return d.msg.ID == rej.ID })
		}
	}
	if err == nil {
		r.failures[th] = 0
		return
	}
	crashed := r.f.takeCrash()
	switch {
	case crashed:
		r.crashes++
		if r.restart != nil {
			if err := r.restart(); err != nil {
				r.problem("restarting the stores after the crash on thread %s: %v", th, err)
			} else {
				r.recoverAfterRestart(ctx)
			}
		}
	case r.plan.AllowConflicts && errors.Is(err, runtime.ErrConflict):
		r.conflicts++
	default:
		r.problem("unexpected slice error on thread %s: %v", th, err)
	}
	r.failures[th]++
	if r.failures[th] > maxFailures {
		r.problem("thread %s failed %d slices in a row; giving up on %d messages", th, r.failures[th], len(batch))
		return
	}
	if crashed && committed && !poisoned && r.plan.DeadLetterAfter > 0 && len(batch) > 0 {
		for _, d := range batch {
			r.poisoned[d.msg.ID] = true
		}
		poisoned = true
	}
	if poisoned && (len(batch) == 0 || batch[0].receives >= r.plan.DeadLetterAfter) {
		// maxReceiveCount reached: the batch moves to the dead-letter
		// queue and the thread goes on with what came after it.
		r.deadMoves++
		for _, d := range batch {
			delete(r.poisoned, d.msg.ID)
			r.dlq = append(r.dlq, d)
		}
		r.failures[th] = 0
		return
	}
	// Redeliver the batch ahead of what arrived since, as the FIFO group
	// does once the visibility timeout expires; a failed kick is kicked
	// again.
	r.boxes[th] = append(batch, r.boxes[th]...)
	if len(batch) == 0 {
		r.kicked[th] = true
	}
	if crashed && committed && r.plan.HoldCrashed && !poisoned {
		r.held[th] = true
	}
}

// recoverAfterRestart kicks the threads the restarted stores say have
// work to do, as serve's recovery does (Backend.Recover).
func (r *Run) recoverAfterRestart(ctx context.Context) {
	if r.recover == nil {
		return
	}
	ids, err := r.recover(ctx)
	if err != nil {
		r.problem("recovering after the restart: %v", err)
		return
	}
	for _, id := range ids {
		r.kicked[id] = true
		r.kicks++
		r.wake(id)
	}
}

// poisonedHead returns how many deliveries at the head of box are
// poisoned (DeadLetterAfter).
func (r *Run) poisonedHead(box []delivery) int {
	n := 0
	for n < len(box) && r.poisoned[box[n].msg.ID] {
		n++
	}
	return n
}

// releaseHeld makes the held batches deliverable and redrives the dead
// letters (as new messages: a redriven message is a first delivery). It
// reports whether there was any.
func (r *Run) releaseHeld() bool {
	any := false
	for th, h := range r.held {
		if h {
			r.held[th] = false
			r.wake(th)
			any = true
		}
	}
	dlq := r.dlq
	r.dlq = nil
	for _, d := range dlq {
		r.redriven++
		r.put(delivery{msg: d.msg})
		any = true
	}
	return any
}

// runSlice runs one slice, turning a panic that escaped the engine into an
// error (the engine recovers its own).
func (r *Run) runSlice(ctx context.Context, in runtime.SliceInput) (res *runtime.SliceResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("chaos: slice of %s panicked outside the engine: %v", in.ThreadID, p)
		}
	}()
	return r.engine.RunSlice(ctx, in)
}

func (r *Run) deadLetter(id, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.dead[id]; !ok {
		r.dead[id] = reason
	}
}

func (r *Run) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

func (r *Run) recordDispatch(inv runtime.Invocation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dispatches = append(r.dispatches, inv)
}

// Calls returns the distinct calls dispatched to a tool, in order of first
// dispatch.
func (r *Run) Calls(tool string) []runtime.Invocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []runtime.Invocation
	seen := map[string]bool{}
	for _, inv := range r.dispatches {
		if inv.Name == tool && !seen[inv.CallID] {
			seen[inv.CallID] = true
			out = append(out, inv)
		}
	}
	return out
}

// FireTimers fires every armed timer, in the order they were armed,
// without moving the run's clock: the timers deliver their messages
// through the run's queue. late also sends the wake-ups cancelled before
// they fired (a wake-up already on its way when the sleep was
// interrupted). It fails when none is due: a scenario fires timers only
// once a sleep has scheduled one. A timer that had fired already and was
// armed again (durable timers re-arm, after a restart, a fired timer whose
// row the crash kept: its wake-up goes out twice) fires too, but is not
// what the step waits for: when every timer that fired was such a
// repeat, FireTimers fails as when none is due, so that Play lets held
// and dead-lettered batches arm the wake-up the step is for, and fires
// again (issue 36).
func (r *Run) FireTimers(ctx context.Context, late bool) error {
	armed := r.clk.takeAll()
	var sent []runtime.Message
	if late {
		sent = r.timers.late()
	}
	if len(armed) == 0 && len(sent) == 0 {
		return errNothingDue
	}
	fresh := r.timers.freshCount()
	for _, a := range armed {
		a.f()
	}
	if len(sent) == 0 {
		if r.timers.freshCount() == fresh {
			return errOnlyRepeats
		}
		return nil
	}
	return r.Send(ctx, sent...)
}

// now is the run's clock: Clock until Timeline moves it.
func (r *Run) now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clock
}

// maxTimeline bounds the wake-ups one Timeline fires: a thread that keeps
// arming timers at the same instant (a deadline that never fires) is a
// problem, not a hang.
const maxTimeline = 40

// Timeline fires the armed timers (sleeps and liveness checks) one at a
// time in the order of their times, moving the run's clock to each before
// it fires and letting the system settle after each, until
// none is left. It fails when none was due, or when the wake-ups do not
// run out.
func (r *Run) Timeline(ctx context.Context) error {
	for n := 0; ; n++ {
		t, ok := r.clk.takeNext()
		if !ok {
			if n == 0 {
				return errNothingDue
			}
			return nil
		}
		if n == maxTimeline {
			return fmt.Errorf("wake-ups keep coming: %d fired, the next due at %s", n, t.due.UTC().Format(time.RFC3339))
		}
		r.mu.Lock()
		if t.due.After(r.clock) {
			r.clock = t.due
		}
		r.mu.Unlock()
		t.f() // the timers deliver its message through the run's queue
		if err := r.settle(ctx); err != nil {
			return err
		}
	}
}

// Slices returns how many slices the run ran, failed ones included.
func (r *Run) Slices() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.slices
}

// Play runs the scenario's steps under the plan, each step followed by
// slices until no thread has mail, and returns the run.
func Play(ctx context.Context, sc *Scenario, b Backend, plan Plan) *Run {
	r := newRun(sc, b, plan)
	for i, step := range sc.Steps {
		err := step(ctx, r)
		if err != nil && (r.releaseHeld() || len(r.ready) > 0) {
			// The input needs work a held or dead-lettered batch still
			// has to send (a call to answer, a sleep to schedule): it
			// waits for that work. A step that failed may have sent
			// mail that releases a held batch itself (FireTimers'
			// repeated wake-ups).
			r.drain(ctx, false)
			err = step(ctx, r)
		}
		if err != nil {
			r.problem("step %d: %v", i, err)
			break
		}
		r.drain(ctx, i == len(sc.Steps)-1)
	}
	return r
}
