package local

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentslice/agentslice/internal/retry"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Config configures a System. Model and Tools are required.
type Config struct {
	Model    runtime.Model
	Tools    runtime.ToolSource
	History  runtime.HistoryStore // default: a new in-memory HistoryStore
	Dedup    runtime.DedupStore   // default: none (history is the authority)
	Output   runtime.Output       // default: discard
	Observer runtime.Observer     // default: slog at the logger's level
	Limits   runtime.Limits
	Logger   *slog.Logger
	// SliceAttempts is how often a slice that failed transiently is retried
	// before its batch goes to the dead letters. Default 5.
	SliceAttempts int
	// RetryBase is the first backoff between slice attempts. Default 10ms.
	RetryBase time.Duration
	// SliceTimeout bounds one slice (its model calls included); the engine
	// commits and continues in a new slice before it runs out
	// (Limits.DeadlineMargin). Default 10 minutes.
	SliceTimeout time.Duration
	// OnSend, when set, sees every message accepted by Send (tests record
	// them to redeliver them).
	OnSend func(msgs []runtime.Message)
	// Compaction is passed to the engine.
	Compaction *runtime.CompactionPolicy
	// Agents, when set, is passed to the engine (runtime.Engine.Agents).
	Agents runtime.Agents
	// Now is the clock slices are timed with; default time.Now.
	Now func() time.Time
	// Inbox, when set, stores every message Send accepts before Send
	// returns (see Inbox). Default: none (accepted messages live in memory).
	Inbox Inbox
	// DeadLetters, when set, keeps the dead letters across restarts (see
	// DeadLetterStore). Default: memory only.
	DeadLetters DeadLetterStore
	// Scheduler bounds the slices running at once and picks which thread
	// runs next by priority class (see scheduler.go).
	Scheduler SchedulerConfig
	// HeapFloor is the least heap, in bytes, the garbage collector paces
	// against once the system has started (heapfloor.go): process-wide,
	// virtual memory only, kept for the life of the process, at most a
	// quarter of GOMEMLIMIT. Default DefaultHeapFloor (64 MiB); negative:
	// none.
	HeapFloor int
	// Tracer, when set, is passed to the engine (runtime.Engine.Tracer):
	// spans per slice and phase, trace context on every message.
	Tracer runtime.Tracer
}

// DeadLetter is a message the system gave up on, with the reason
// (deadletters.go: redrive, discard, resolution).
type DeadLetter struct {
	Message runtime.Message
	Reason  string
	// At is when it was set aside (or redriven, the latest).
	At     time.Time
	Status DeadLetterStatus
}

const maxDeadLetters = 10000

var errStopped = errors.New("local: system stopped")

// System is the embedded agent system. It implements runtime.Queue.
type System struct {
	engine *runtime.Engine
	cfg    Config
	log    *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// classCtx is ctx carrying each class (withClass), made once.
	classCtx [2]context.Context

	// Mailboxes are sharded by thread so that threads on different cores
	// do not queue on one lock: a message takes only its shard's lock,
	// and s.mu is taken only when a thread's goroutine starts or exits.
	seed    maphash.Seed
	shards  [mailboxShards]mailboxShard
	started atomic.Bool
	stopped atomic.Bool // set under mu

	mu       sync.Mutex
	active   int           // threads with a goroutine
	idle     chan struct{} // closed while no thread has a goroutine
	dead     []DeadLetter
	deadSeen int
	deadIDs  map[deadKey]int // index in dead of each (thread, message ID): one dead letter per message
	deadOpen atomic.Int64    // entries not resolved
	sched    *scheduler
	budget   *BudgetedModel // nil without Scheduler.Budget
}

const mailboxShards = 64

type mailboxShard struct {
	mu    sync.Mutex
	boxes map[string]*mailbox
	_     [48]byte // one cache line per shard
}

type mailbox struct {
	msgs []runtime.Message
	kick bool // run a slice even with no messages (Kick)
	// class is the thread's class (classIndex), from the message that
	// made it ready.
	class int
}

// New builds a System. Call Start before sending and Stop when done.
func New(cfg Config) (*System, error) {
	if cfg.Model == nil {
		return nil, errors.New("local: Config.Model is required")
	}
	if cfg.Tools == nil {
		return nil, errors.New("local: Config.Tools is required")
	}
	if cfg.History == nil {
		cfg.History = NewHistoryStore()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = runtime.SlogObserver{Logger: cfg.Logger}
	}
	if cfg.SliceAttempts <= 0 {
		cfg.SliceAttempts = 5
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = 10 * time.Millisecond
	}
	if cfg.SliceTimeout <= 0 {
		cfg.SliceTimeout = 10 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HeapFloor == 0 {
		cfg.HeapFloor = DefaultHeapFloor
	}
	dw, ok := cfg.History.(DiskWaiter)
	cfg.Scheduler = cfg.Scheduler.withDefaults(ok && dw.CommitsWaitForDisk())
	if err := cfg.Scheduler.validate(); err != nil {
		return nil, err
	}
	s := &System{cfg: cfg, log: cfg.Logger, seed: maphash.MakeSeed(), idle: make(chan struct{}), deadIDs: map[deadKey]int{},
		sched: newScheduler(cfg.Scheduler)}
	for i := range s.shards {
		s.shards[i].boxes = map[string]*mailbox{}
	}
	close(s.idle)
	if err := s.loadDeadLetters(context.Background()); err != nil {
		return nil, err
	}
	if b := cfg.Scheduler.Budget; b != nil {
		bb := *b
		if bb.Share == 0 {
			bb.Share = cfg.Scheduler.BackgroundShare
		}
		bb.FIFO = bb.FIFO || cfg.Scheduler.FIFO
		m, err := Budgeted(cfg.Model, bb)
		if err != nil {
			return nil, err
		}
		s.budget, cfg.Model = m, m
	}
	s.engine = &runtime.Engine{History: cfg.History, Dedup: cfg.Dedup, Queue: s, Output: cfg.Output,
		Model: cfg.Model, Tools: cfg.Tools, Observer: cfg.Observer, Limits: cfg.Limits, Compaction: cfg.Compaction, Now: cfg.Now,
		Agents: cfg.Agents, Tracer: cfg.Tracer}
	return s, nil
}

// Engine returns the engine the system runs slices with.
func (s *System) Engine() *runtime.Engine { return s.engine }

// Start lets the system run slices until ctx ends or Stop is called.
func (s *System) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx != nil {
		return errors.New("local: system already started")
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	for c := range s.classCtx {
		s.classCtx[c] = withClass(s.ctx, c)
	}
	raiseHeapFloor(s.cfg.HeapFloor)
	s.started.Store(true)
	return nil
}

// Stop stops accepting messages, cancels running slices and waits for every
// thread goroutine to exit. It is safe to call twice.
func (s *System) Stop() {
	s.mu.Lock()
	s.stopped.Store(true)
	cancel := s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	// Threads still waiting for a slot get their goroutine as slots free
	// up, see the cancelled context and are forgotten (drain).
	s.wg.Wait()
	if s.budget != nil {
		s.budget.Close()
	}
}

// Send validates and enqueues messages. Invalid messages are refused, all
// of them, with an error naming the first problem; nothing is enqueued then.
// A message without an arrival time (Message.At) gets the engine's clock's.
func (s *System) Send(ctx context.Context, msgs ...runtime.Message) error {
	var now runtime.Stamp
	for i := range msgs {
		if msgs[i].V == 0 {
			msgs[i].V = runtime.MessageVersion
		}
		if msgs[i].At == 0 {
			if now == 0 {
				now = runtime.StampOf(s.engine.Clock())
			}
			msgs[i].At = now
		}
		if err := msgs[i].Validate(); err != nil {
			return err
		}
	}
	if s.cfg.OnSend != nil {
		s.cfg.OnSend(msgs)
	}
	if err := s.accepting(); err != nil {
		return err
	}
	if s.cfg.Inbox != nil {
		if err := s.cfg.Inbox.Put(ctx, msgs); err != nil {
			return fmt.Errorf("local: storing accepted messages: %w", err)
		}
	}
	for _, m := range msgs {
		sh, box, err := s.lockClassBox(m.ThreadID, m.Class)
		if err != nil {
			return err
		}
		box.msgs = append(box.msgs, m)
		sh.mu.Unlock()
	}
	return nil
}

// accepting says why the system takes no messages, if it does not.
func (s *System) accepting() error {
	if !s.started.Load() {
		return errors.New("local: system not started")
	}
	if s.stopped.Load() {
		return errStopped
	}
	return nil
}

// lockBox returns the thread's mailbox (making the thread ready, as
// interactive, if needed) with its shard locked; the caller unlocks sh.mu.
func (s *System) lockBox(threadID string) (sh *mailboxShard, box *mailbox, err error) {
	return s.lockClassBox(threadID, "")
}

// lockClassBox is lockBox for a thread of the given class: a new mailbox
// goes into its class's ready queue, and the scheduler starts what may run
// now (the goroutine reads the mailbox only under sh.mu, after the caller
// has filled it).
func (s *System) lockClassBox(threadID string, class runtime.Class) (sh *mailboxShard, box *mailbox, err error) {
	sh = &s.shards[maphash.String(s.seed, threadID)%mailboxShards]
	sh.mu.Lock()
	box = sh.boxes[threadID]
	if box == nil {
		box = &mailbox{class: classIndex(class)}
		if !s.threadStarts(threadID, sh, box) {
			sh.mu.Unlock()
			return nil, nil, errStopped
		}
		sh.boxes[threadID] = box
	}
	return sh, box, nil
}

// threadStarts counts a thread with work and makes it ready; false when
// the system is stopped. Lock order: a shard's mu, then s.mu.
func (s *System) threadStarts(threadID string, sh *mailboxShard, box *mailbox) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.Load() {
		return false
	}
	if s.active == 0 {
		s.idle = make(chan struct{})
	}
	s.active++
	s.sched.add(threadID, sh, box)
	s.dispatch(false)
	return true
}

// threadEnds gives back the slot of a thread that has no work left and
// counts it gone. It returns the next ready thread for the calling
// goroutine to run, if one may run now (see dispatch).
func (s *System) threadEnds(box *mailbox) (ready, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sched.done(box.class)
	s.active--
	if s.active == 0 {
		close(s.idle)
	}
	return s.dispatch(true)
}

// requeue gives back the slot of a thread that still has work, putting it
// at the end of its class's ready queue, and returns the next ready thread
// for the calling goroutine to run, as threadEnds does.
func (s *System) requeue(threadID string, sh *mailboxShard, box *mailbox) (ready, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sched.done(box.class)
	s.sched.add(threadID, sh, box)
	return s.dispatch(true)
}

// dispatch starts a goroutine for each ready thread the scheduler lets run
// now. With self, the calling goroutine (one whose thread just gave back
// its slot) takes the first of them instead of starting a new one: a
// drain goroutine goes on with the next ready thread, with the stack it
// has grown, rather than exiting while another starts (goroutine start and
// stack growth were 5% of the density benchmark's CPU). Called with s.mu
// held.
func (s *System) dispatch(self bool) (mine ready, ok bool) {
	for {
		r, more := s.sched.take()
		if !more {
			return mine, ok
		}
		if self && !ok {
			mine, ok = r, true
			continue
		}
		s.wg.Add(1)
		go s.drain(r)
	}
}

// Idle returns a channel that is closed when no thread has work. A Send
// after that makes a new channel.
func (s *System) Idle() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idle
}

// Active returns the number of threads that have a goroutine right now.
func (s *System) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// DeadLetters returns the messages the system gave up on (the most recent
// maxDeadLetters, one per message ID) and how many distinct ones there were
// in all.
func (s *System) DeadLetters() ([]DeadLetter, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]DeadLetter(nil), s.dead...), s.deadSeen
}

// drain runs ready threads, one after the other, each until its mailbox is
// empty or it yields, and exits when no ready thread may run. It is the
// goroutine that owns a slot.
func (s *System) drain(r ready) {
	defer s.wg.Done()
	// Two batch arrays take turns: one is run while Send appends to the
	// other (a slice does not keep its input batch). Both go on with the
	// goroutine: a mailbox keeps neither once its thread has given back
	// the slot, except the one holding mail for a thread that yielded.
	var spare []runtime.Message
	for ok := true; ok; {
		r, ok = s.drainThread(r.threadID, r.sh, r.box, &spare)
	}
}

// drainThread runs the thread's slices until its mailbox is empty, and
// then gives back its slot. It yields the slot (scheduler.shouldYield)
// when a background thread's slice ends while interactive threads wait, or
// after a burst of slices while any thread waits: the thread keeps its
// mailbox (so its messages stay in order) and queues again at the end of
// its class's ready queue. It returns the thread to run next, if any.
func (s *System) drainThread(threadID string, sh *mailboxShard, box *mailbox, spare *[]runtime.Message) (ready, bool) {
	ctx := s.classCtx[box.class]
	for n := 1; ; n++ {
		sh.mu.Lock()
		batch, kick := box.msgs, box.kick
		box.msgs, box.kick = *spare, false
		if (len(batch) == 0 && !kick) || s.ctx.Err() != nil {
			delete(sh.boxes, threadID)
			sh.mu.Unlock()
			return s.threadEnds(box)
		}
		sh.mu.Unlock()
		if s.runBatch(ctx, threadID, batch) && s.cfg.Inbox != nil && len(batch) > 0 {
			if err := s.cfg.Inbox.Done(threadID, ids(batch)); err != nil {
				s.log.Warn("could not remove consumed messages from the inbox; they will be delivered again", "thread", threadID, "error", err)
			}
		}
		clear(batch)
		*spare = batch[:0]
		if s.sched.shouldYield(box.class, n) {
			sh.mu.Lock()
			more := (len(box.msgs) > 0 || box.kick) && s.ctx.Err() == nil
			if !more {
				delete(sh.boxes, threadID)
			}
			sh.mu.Unlock()
			if more {
				return s.requeue(threadID, sh, box)
			}
			return s.threadEnds(box)
		}
	}
}

func ids(ms []runtime.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// runBatch runs one slice, retrying transient failures with backoff. The
// messages are redelivered as they would be from a queue; the engine
// deduplicates what an earlier attempt already committed. It reports
// whether the slice finished with the batch (false: Stop cancelled it).
func (s *System) runBatch(ctx context.Context, threadID string, batch []runtime.Message) bool {
	var err error
	for attempt := 1; attempt <= s.cfg.SliceAttempts; attempt++ {
		var res *runtime.SliceResult
		res, err = s.engine.RunSlice(ctx, runtime.SliceInput{ThreadID: threadID, Messages: batch,
			FirstDelivery: attempt == 1, Timeout: s.cfg.SliceTimeout, Validated: true}) // by Send, the only way in
		if res != nil && len(res.Rejected) > 0 {
			for _, r := range res.Rejected {
				s.deadLetter(find(batch, r.ID), r.Err.Error())
			}
			batch = without(batch, res.Rejected)
		}
		if err == nil {
			s.resolveDead(batch)
			return true
		}
		if s.ctx.Err() != nil {
			return false
		}
		s.log.Warn("slice failed; retrying", "thread", threadID, "attempt", attempt, "error", err)
		if (retry.Backoff{Base: s.cfg.RetryBase}).Wait(s.ctx, attempt) != nil {
			return false
		}
	}
	for _, m := range batch {
		s.deadLetter(m, fmt.Sprintf("gave up after %d attempts: %v", s.cfg.SliceAttempts, err))
	}
	return true
}

func without(batch []runtime.Message, rej []runtime.Rejection) []runtime.Message {
	out := batch[:0:0]
	for _, m := range batch {
		keep := true
		for _, r := range rej {
			keep = keep && r.ID != m.ID
		}
		if keep {
			out = append(out, m)
		}
	}
	return out
}

func find(batch []runtime.Message, id string) runtime.Message {
	for _, m := range batch {
		if m.ID == id {
			return m
		}
	}
	return runtime.Message{ID: id}
}

// deadLetter sets a message aside for good. A message already among the
// dead letters (a redelivered or retried message refused again) is not
// added twice: an open entry stays as it is, a redriven or resolved one is
// open again with the new reason. Each new dead letter is also published,
// best effort, as an "error" output event of its thread, so whoever
// watches the thread learns that something addressed to it was not
// processed.
func (s *System) deadLetter(m runtime.Message, reason string) {
	s.mu.Lock()
	d := DeadLetter{Message: m, Reason: reason, At: s.engine.Clock(), Status: DeadOpen}
	if i, ok := s.deadIDs[keyOf(m)]; ok {
		if s.dead[i].Status == DeadOpen {
			s.mu.Unlock()
			s.log.Debug("message dead-lettered again (already set aside)", "thread", m.ThreadID, "message", m.ID)
			return
		}
		if s.dead[i].Status == DeadResolved {
			s.deadOpen.Add(1)
		}
		s.dead[i] = d
		s.deadSeen++
		s.mu.Unlock()
		s.log.Error("message dead-lettered again after a redrive", "thread", m.ThreadID, "message", m.ID, "reason", reason)
	} else {
		s.log.Error("message dead-lettered", "thread", m.ThreadID, "message", m.ID, "reason", reason)
		s.deadSeen++
		if len(s.dead) >= maxDeadLetters {
			if s.dead[0].Status != DeadResolved {
				s.deadOpen.Add(-1)
			}
			s.dead = s.dead[1:]
			s.reindexDead()
		}
		s.deadIDs[keyOf(m)] = len(s.dead)
		s.dead = append(s.dead, d)
		s.deadOpen.Add(1)
		s.mu.Unlock()
	}
	s.storeDead(d)
	if s.cfg.Output == nil || m.ThreadID == "" {
		return
	}
	ev := runtime.OutputEvent{ID: runtime.DeriveID("dead_", m.ThreadID, m.ID), ThreadID: m.ThreadID, Kind: "error",
		Text: fmt.Sprintf("a %s message (%s) for this thread could not be processed and was set aside: %s", m.Kind, m.ID, reason)}
	if err := s.cfg.Output.Publish(context.Background(), ev); err != nil {
		s.log.Warn("dead letter not published as an error event", "thread", m.ThreadID, "message", m.ID, "error", err)
	}
}
