package runtime

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"time"

	"github.com/agentslice/agentslice/internal/retry"
)

// Limits bound a slice.
type Limits struct {
	// MaxCompletions caps the completions of one slice (synchronous tool
	// loop-backs). Hitting it commits and enqueues a continuation. Default 8.
	MaxCompletions int
	// DeadlineMargin is kept free before the context's deadline; a slice
	// that reaches it commits and enqueues a continuation. Default 2s.
	DeadlineMargin time.Duration
	// ModelAttempts is how often one completion is tried. Default 4.
	ModelAttempts int
	// RetryBase is the first backoff between model attempts; it doubles
	// each time, with full jitter. Default 200ms.
	RetryBase time.Duration
	// MaxSubscriptions caps the subscriptions a thread keeps active at
	// once: a call that would start one more gets its result with an error
	// the model can read, the subscription is not kept and the tool is
	// asked to cancel it. 0: no cap.
	MaxSubscriptions int
	// MaxChildren caps the children a thread has alive at once (spawned
	// with spawn_thread and not closed): a spawn_thread call beyond it
	// gets an error result the model can read, and no child. A child's
	// close reaches the parent as a close notice (a report with Final
	// set and no text, which enters no history). 0: no cap.
	MaxChildren int
	// MaxInheritedDepth caps how many ancestors a thread's view reaches
	// (ThreadState.Reach): a thread whose chain of uncompacted ancestors
	// is deeper is folded into one summary (it compacts on its slice,
	// whatever its token count), so that its later slices load none of
	// its ancestors' items. 0: no cap.
	MaxInheritedDepth int
}

func (l Limits) withDefaults() Limits {
	if l.MaxCompletions <= 0 {
		l.MaxCompletions = 8
	}
	if l.DeadlineMargin <= 0 {
		l.DeadlineMargin = 2 * time.Second
	}
	if l.ModelAttempts <= 0 {
		l.ModelAttempts = 4
	}
	if l.RetryBase <= 0 {
		l.RetryBase = 200 * time.Millisecond
	}
	return l
}

// Engine runs slices. It holds no per-thread state: everything a slice needs
// is loaded from History and everything it produces is committed there, so
// one Engine serves any number of threads, in one process or across Lambda
// invocations.
type Engine struct {
	History  HistoryStore
	Dedup    DedupStore // optional fast path; history is the authority
	Queue    Queue
	Output   Output // optional
	Model    Model
	Tools    ToolSource
	Observer Observer // optional
	Limits   Limits
	Now      func() time.Time // optional; time.Now
	// Compaction, when set, summarises threads that approach the model's
	// context window.
	Compaction *CompactionPolicy
	// Agents, when set, resolves the agent each thread runs as (its
	// instructions, model, tools and limits; see agent_slice.go). Nil:
	// no system prompt, Model and every tool for every thread.
	Agents Agents
	// Faults injects crashes at step boundaries. Tests only: nil in
	// production.
	Faults FaultInjector
	// Liveness, when set, gives every dispatched call a deadline and
	// status checks (liveness.go).
	Liveness *Liveness
	// ProviderWait, when set, makes threads wait out model provider
	// outages through timers instead of failing the slice
	// (provider_wait.go).
	ProviderWait *ProviderWait
	// Budgets, when set, prices completions and admits each against the
	// thread's and its tree's limits (budget.go). Thread and agent limits
	// apply without it; their cost is then 0.
	Budgets *Budgets
	// Entropy is where a new root thread's incarnation comes from
	// (ThreadState.Incarnation); nil: crypto/rand. Tests that compare the
	// IDs of separate runs set a fixed reader (runtime.FixedEntropy).
	Entropy io.Reader
	// Tracer, when set, gives every slice a span with a child per phase
	// (load, each completion, commit, send, dispatch, mark) and stamps the
	// trace context on what the slice sends (trace.go). Nil: no tracing.
	Tracer Tracer
}

// SliceInput is one slice's work: a batch of messages for one thread, in
// delivery order.
type SliceInput struct {
	ThreadID string
	Messages []Message
	// FirstDelivery says no message of the batch was delivered before, so
	// the DedupStore lookup is skipped (history is still checked).
	FirstDelivery bool
	// Deadline, when set, is when the slice stops starting completions
	// (less Limits.DeadlineMargin) and continues in a new slice, like a
	// context deadline, but without cancelling a completion in flight and
	// without the cost of a context timer.
	Deadline time.Time
	// Validated says the caller checked every message with
	// Message.Validate and that each is for ThreadID (the embedded system
	// does so in Send), so the slice does not check them again.
	Validated bool
	// Timeout, when positive, is Deadline given relative to the start of
	// the slice, so that the caller need not read the clock for it (the
	// embedded system uses it). When both are set the earlier one counts.
	Timeout time.Duration
}

// RunSlice runs one slice. A returned error means the slice committed
// nothing it should not have and may be retried as a whole (ErrConflict
// included); permanent problems with single messages are reported in
// SliceResult.Rejected instead.
func (e *Engine) RunSlice(ctx context.Context, in SliceInput) (res *SliceResult, err error) {
	s := newSlice(e, in.ThreadID)
	out := s.res // the result outlives the recycled slice
	start := e.now()
	s.start = StampOf(start)
	if in.Timeout > 0 {
		if dl := start.Add(in.Timeout); in.Deadline.IsZero() || dl.Before(in.Deadline) {
			in.Deadline = dl
		}
	}
	var span Span
	if e.Tracer != nil {
		ctx, span = e.Tracer.StartSlice(ctx, in.ThreadID, in.Messages)
	}
	defer func() {
		r := recover()
		if r != nil {
			err = fmt.Errorf("runtime: slice of thread %s panicked: %v\n%s", in.ThreadID, r, debug.Stack())
		}
		if span != nil {
			s.endSliceSpan(span, len(in.Messages), err)
		}
		if e.wants(EventSliceFinished, err != nil) {
			e.Observer.Observe(ctx, Event{Type: EventSliceFinished, ThreadID: in.ThreadID, SliceID: out.ID(),
				MessageIDs: out.Processed, Duration: e.now().Sub(start), Err: err})
		}
		if r == nil {
			s.recycle()
		}
	}()
	return s.run(ctx, in)
}

// Clock returns the engine's time (Engine.Now, else time.Now): the one
// clock history is stamped with.
func (e *Engine) Clock() time.Time { return e.now() }

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// wants reports whether the observer acts on events of type t (see
// EventFilter); an event nobody wants is not built.
func (e *Engine) wants(t EventType, failed bool) bool {
	if e.Observer == nil {
		return false
	}
	f, ok := e.Observer.(EventFilter)
	return !ok || f.Wants(t, failed)
}

// observe tells the observer ev, with the slice's ID, if it wants it.
func (s *slice) observe(ctx context.Context, ev Event) {
	if s.e.wants(ev.Type, ev.Err != nil) {
		s.tell(ctx, ev)
	}
}

// tell gives the observer an event it wants (the caller asked wants first,
// to build the event only then), with the slice's ID.
func (s *slice) tell(ctx context.Context, ev Event) {
	ev.SliceID = s.res.ID()
	s.e.Observer.Observe(ctx, ev)
}

// slice is the working state of one RunSlice call.
type slice struct {
	e        *Engine
	lim      Limits
	threadID string
	res      *SliceResult
	deadline time.Time
	start    Stamp // when RunSlice began: the end of its inputs' queueing (Item.Took)
	// loadTook is the load's duration, when the observer wants
	// EventThreadLoaded (loadTimed).
	loadTook  time.Duration
	loadTimed bool

	th      *Thread
	version int64 // committed version
	length  int   // committed own length
	// view is the thread's view; the items appended since the last commit
	// are view[mark:] (uncommitted), so that an item is stored once and a
	// commit hands the store the very slots a leased view appended to.
	view []Item
	mark int
	// turnBase and joined describe the own items the load left out
	// (loadedTurns); full is the whole view, loaded when a call the
	// loaded view lacks is looked up (findCall), and ctx the slice's
	// context for that load.
	turnBase int
	joined   bool
	full     []Item
	// leftOutAsked says the load answered which of the batch's messages
	// the own items it left out consumed (InputViewLoader): those in
	// leftOutSeen.
	leftOutAsked bool
	leftOutSeen  []string
	ctx          context.Context
	st           ThreadState // working state for the next commit
	children     []ChildThread
	inputs       []string
	dirty        bool
	toolset      Toolset
	// classNamed is whether a message of a new root thread named its class
	// (else its agent's Priority may set it).
	classNamed bool
	// wasClosed is whether the thread was closed when loaded or by an
	// earlier commit of this slice.
	wasClosed bool
	// mctx bounds model calls by the slice deadline (see modelContext).
	mctx    context.Context
	mcancel context.CancelFunc
	buf     turnBuffer
	agent   agentState // the thread's agent (agent_slice.go)
	// foldErr is a transient failure while folding (arming a liveness
	// check): the slice is retried.
	foldErr error

	// Kept with the (recycled) slice rather than allocated one by one: the
	// commit and completion request it hands on (each used by one call at
	// a time, see slicepool.go) and room for the inputs of a typical slice.
	commitArg Commit
	req       CompletionRequest
	inputsBuf [2]string
}

// run is one slice, in its phases: screen the batch, load the thread and
// begin the draft, recover an outbox a predecessor left unsent, fold the
// batch, complete, commit and send until nothing is left to send, and
// mark the inputs processed in the dedup store.
func (s *slice) run(ctx context.Context, in SliceInput) (*SliceResult, error) {
	s.setDeadline(ctx, in)
	s.ctx = ctx
	defer func() {
		if s.mcancel != nil {
			s.mcancel()
		}
	}()
	s.inputs = s.inputsBuf[:0]
	batch, done, err := s.screen(ctx, in)
	if done || err != nil {
		return s.res, err
	}
	lctx, sp := s.span(ctx, SpanLoad)
	leaser, err := s.load(lctx, batch)
	endSpan(sp, err)
	if err != nil {
		return s.res, err
	}
	if leaser != nil {
		defer leaser.Release(s.threadID, s.th.Lease)
	}
	if err := s.begin(ctx, batch); err != nil {
		return s.res, err
	}
	wake, err := s.recoverOutbox(ctx, in, batch)
	if err != nil {
		return s.res, err
	}
	if s.foldBatch(ctx, batch) {
		wake = true
	}
	if s.foldErr != nil {
		return s.res, s.foldErr
	}
	s.mutateAfterFold(ctx)
	sentMarker, err := s.loop(ctx, wake)
	if err != nil {
		return s.res, err
	}
	return s.res, s.markDone(ctx, sentMarker)
}

// setDeadline sets when the slice stops starting completions: the
// earlier of the context's deadline and the input's, less the margin.
func (s *slice) setDeadline(ctx context.Context, in SliceInput) {
	if dl, ok := ctx.Deadline(); ok {
		s.deadline = dl.Add(-s.lim.DeadlineMargin)
	}
	if !in.Deadline.IsZero() {
		if dl := in.Deadline.Add(-s.lim.DeadlineMargin); s.deadline.IsZero() || dl.Before(s.deadline) {
			s.deadline = dl
		}
	}
}

// screen is the batch without the messages that can never be processed
// and, on a redelivery, those the dedup store marks processed; done when
// none is left that way, so that the thread need not be loaded.
func (s *slice) screen(ctx context.Context, in SliceInput) (batch []Message, done bool, err error) {
	batch = s.validate(in)
	if len(batch) == 0 || s.e.Dedup == nil || in.FirstDelivery {
		return batch, false, nil
	}
	if batch, err = s.dropMarked(ctx, batch); err != nil {
		return nil, false, err
	}
	if len(batch) == 0 {
		// Every message was marked by a slice that finished (the mark is
		// written after its commit and its sends): nothing to load.
		s.res.derive(s.threadID, -1, in.Messages)
		return nil, true, nil
	}
	return batch, false, nil
}

// load loads the thread, leased when the store leases; the returned
// LeaseLoader, when not nil, must release s.th.Lease at the end.
func (s *slice) load(ctx context.Context, batch []Message) (LeaseLoader, error) {
	t0, timed := s.startTimer(EventThreadLoaded)
	var asked []string
	if _, ok := s.e.History.(InputViewLoader); ok && len(batch) > 0 {
		asked = ids(batch)
	}
	th, leaser, consumed, err := LoadForBatch(ctx, s.e.History, s.threadID, asked)
	if err != nil {
		return nil, fmt.Errorf("runtime: loading thread %s: %w", s.threadID, err)
	}
	s.leftOutAsked, s.leftOutSeen = consumed != nil, nil
	for i, c := range consumed {
		if c {
			s.leftOutSeen = append(s.leftOutSeen, asked[i])
		}
	}
	if timed { // told by begin, once the slice has its ID
		s.loadTook, s.loadTimed = s.e.now().Sub(t0), true
	}
	s.th, s.version, s.length = th, th.State.Version, th.State.Length
	return leaser, nil
}

// begin starts the draft from the loaded thread: its view and working
// state, and a new root thread's class and incarnation.
func (s *slice) begin(ctx context.Context, batch []Message) error {
	if err := s.crash(CrashAfterLoad); err != nil {
		return err
	}
	th := s.th
	s.view = th.Items // the caller owns Load's slice (see HistoryStore)
	s.mark = len(s.view)
	s.loadedTurns()
	// The caller owns Load's state too, and the working state is changed
	// copy-on-write only (slices are appended to or replaced, never written
	// in place), so it needs no copy of its own.
	s.st = th.State
	if s.version == 0 && s.st.Class == "" && s.st.Parent == "" {
		// A new root thread: its class is fixed now, from its first message.
		s.st.Class, s.classNamed = batchClass(batch)
	}
	if s.version == 0 && s.st.Incarnation == "" && s.st.Parent == "" {
		// And its incarnation, committed with the first items.
		r := s.e.Entropy
		if r == nil {
			r = rand.Reader
		}
		var err error
		if s.st.Incarnation, err = newIncarnation(r, s.threadID); err != nil {
			return err
		}
	}
	s.wasClosed = th.State.Closed
	s.res.derive(s.threadID, s.version, batch)
	if s.e.wants(EventSliceStarted, false) {
		s.tell(ctx, Event{Type: EventSliceStarted, ThreadID: s.threadID,
			MessageIDs: ids(batch), Version: s.version})
	}
	if s.loadTimed {
		s.tell(ctx, Event{Type: EventThreadLoaded, ThreadID: s.threadID, Version: s.version, Duration: s.loadTook})
	}
	return nil
}

// foldBatch folds the batch's messages history has not consumed yet;
// true when one wakes the model.
func (s *slice) foldBatch(ctx context.Context, batch []Message) (wake bool) {
	for _, m := range s.dedupHistory(batch) {
		n := len(s.view)
		if s.fold(ctx, m) {
			wake = true
		}
		s.stampQueued(m, n)
	}
	return wake
}

// stampQueued gives the items from view[n:] that consumed m its arrival
// and the time it was queued (Item.Took) until this slice began.
func (s *slice) stampQueued(m Message, n int) {
	if m.At == 0 || m.At > s.start {
		return // not stamped, or stamped by a clock ahead of the engine's
	}
	for i := n; i < len(s.view); i++ {
		if it := &s.view[i]; it.Input == m.ID {
			it.At, it.Took = m.At, uint32(min(int64(s.start-m.At), math.MaxUint32))
			s.res.Queued = max(s.res.Queued, time.Duration(it.Took)*time.Millisecond)
		}
	}
}

// loop completes (when woken and free to), commits and sends, until
// nothing committed is left to send. With a DedupStore, the record that
// the last outbox went out is returned (sentMarker) for markDone to write,
// instead of a second commit.
func (s *slice) loop(ctx context.Context, wake bool) (sentMarker string, err error) {
	for {
		if wake && s.st.Pending == nil && !s.st.Closed {
			if err := s.complete(ctx); err != nil {
				return "", err
			}
		}
		s.maybeCompact()
		if err := s.commit(ctx, false); err != nil {
			return "", err
		}
		if len(s.st.Outbox) == 0 && (s.st.Pending == nil || s.st.Pending.Dispatched) {
			return "", nil
		}
		sctx, sp := s.span(ctx, SpanSend)
		rejected, err := s.send(sctx)
		endSpan(sp, err)
		if err != nil {
			return "", err
		}
		wake = rejected // a rejected dispatch got an error result: the model goes on
		if wake {
			continue
		}
		if s.e.Dedup != nil {
			// Record "sent" with the dedup write instead of a second
			// commit; the next slice clears the outbox.
			return OutboxSentID(s.version), nil
		}
		return "", s.commit(ctx, true)
	}
}

// markDone records the inputs processed (and the outbox sent, sentMarker)
// in the dedup store, the fast path of the next slice's checks.
func (s *slice) markDone(ctx context.Context, sentMarker string) error {
	if s.e.Dedup == nil || (len(s.inputs) == 0 && sentMarker == "") {
		return nil
	}
	ids := s.inputs
	if sentMarker != "" {
		ids = append(slices.Clone(ids), sentMarker)
	}
	t0, timed := s.startTimer(EventInputsMarked)
	mctx, sp := s.span(ctx, SpanMark)
	err := s.e.Dedup.Mark(mctx, s.threadID, ids)
	endSpan(sp, err)
	s.timedEvent(ctx, Event{Type: EventInputsMarked, ThreadID: s.threadID, Err: err}, t0, timed && err == nil)
	if err != nil {
		// History already records the inputs, and an outbox not marked
		// sent is sent again (same IDs): a missing mark costs a check
		// or a duplicate delivery, never a loss.
		s.observe(ctx, Event{Type: EventSliceFinished, ThreadID: s.threadID,
			Reason: "dedup mark failed", Err: err})
	}
	return s.crash(CrashAfterDedupMark)
}

// validate drops messages that can never be processed, recording why.
func (s *slice) validate(in SliceInput) []Message {
	if in.Validated {
		return in.Messages
	}
	valid := true
	for i := range in.Messages {
		if in.Messages[i].Validate() != nil || in.Messages[i].ThreadID != in.ThreadID {
			valid = false
			break
		}
	}
	if valid {
		return in.Messages // the common case: no copy
	}
	out := make([]Message, 0, len(in.Messages))
	for _, m := range in.Messages {
		err := m.Validate()
		if err == nil && m.ThreadID != in.ThreadID {
			err = &BadMessageError{ID: m.ID, Field: "thread_id", Reason: fmt.Sprintf("message for thread %q in a slice of thread %q", m.ThreadID, in.ThreadID)}
		}
		if err != nil {
			s.reject(context.Background(), m.ID, err)
			continue
		}
		out = append(out, m)
	}
	return out
}

func (s *slice) reject(ctx context.Context, id string, err error) {
	s.res.Rejected = append(s.res.Rejected, Rejection{ID: id, Err: err})
	s.observe(ctx, Event{Type: EventMessageRejected, ThreadID: s.threadID, MessageIDs: []string{id}, Reason: err.Error()})
}

// appendItem adds an item to history (uncommitted) and to the model's view.
func (s *slice) appendItem(it Item) {
	s.view = append(s.view, it)
	s.changed()
	if it.Input != "" && !slices.Contains(s.inputs, it.Input) {
		s.inputs = append(s.inputs, it.Input)
		s.res.Processed = append(s.res.Processed, it.Input)
	}
}

// ownPos is the own-history position the next appended item will get.
func (s *slice) ownPos() int { return s.length + len(s.view) - s.mark }

// commit writes what the slice has produced since the last commit;
// sentOnly when that is only the record that the outbox went out
// (Commit.SentOnly).
func (s *slice) commit(ctx context.Context, sentOnly bool) error {
	if !s.dirty {
		return nil
	}
	// A shallow copy: the working state is changed copy-on-write (see run),
	// and stores copy what they keep.
	// Every item gets the commit's time unless it carries its own (a
	// result's arrival). The tail past mark is the slice's own.
	if len(s.view) > s.mark {
		now := StampOf(s.e.now())
		for i := s.mark; i < len(s.view); i++ {
			if s.view[i].At == 0 {
				s.view[i].At = now
			}
		}
	}
	for i := range s.children {
		// A child's model view starts where the view it inherits does.
		s.children[i].State.ViewStart = s.viewStartAt(s.children[i].SpawnAt)
		s.children[i].State.Reach = s.childReach(s.children[i].State.ViewStart)
	}
	st := s.st
	st.Version = s.version + 1
	st.Length = s.length + len(s.view) - s.mark
	// Append aliases the view's slots; the engine only ever appends past
	// them, so they stay as committed.
	s.commitArg = Commit{ThreadID: s.threadID, Expected: s.version, Append: s.view[s.mark:len(s.view):len(s.view)], State: st,
		Children: s.children, Inputs: s.inputs, Lease: s.th.Lease, SentOnly: sentOnly}
	c := &s.commitArg
	s.mutateCommit(ctx, c)
	t0, timed := s.startTimer(EventTurnCommitted)
	cctx, sp := s.span(ctx, SpanCommit)
	err := s.e.History.Commit(cctx, c)
	endCommitSpan(sp, st.Version, err)
	if err != nil {
		return fmt.Errorf("runtime: committing thread %s at version %d: %w", s.threadID, s.version, err)
	}
	s.timedEvent(ctx, Event{Type: EventTurnCommitted, ThreadID: s.threadID, Version: st.Version}, t0, timed)
	closing := st.Closed && !s.wasClosed
	s.version, s.length = st.Version, st.Length
	s.st = st
	s.mark, s.children, s.dirty = len(s.view), nil, false
	if closing {
		s.wasClosed = true
		if c, ok := s.e.Tools.(ThreadCloser); ok {
			c.CloseThread(s.threadID)
		}
	}
	return s.crash(CrashAfterCommit)
}

// send delivers the committed outbox and dispatches the committed pending
// call. It reports rejected=true when the tool refused the call for good;
// the call then has an error result and the model should go on.
func (s *slice) send(ctx context.Context) (rejected bool, err error) {
	for _, o := range s.st.Outbox {
		switch {
		case o.Message != nil:
			if err := s.e.Queue.Send(ctx, s.traced(ctx, s.stamp(*o.Message))); err != nil {
				return false, fmt.Errorf("runtime: sending %s to thread %s: %w", o.Message.ID, o.Message.ThreadID, err)
			}
			if o.Message.Kind == KindContinue {
				s.res.Continued = true
			}
			if err := s.crash(CrashAfterSend); err != nil {
				return false, err
			}
		case o.Output != nil:
			if s.e.Output != nil {
				if err := s.e.Output.Publish(ctx, *o.Output); err != nil {
					if !IsPermanent(err) {
						return false, fmt.Errorf("runtime: publishing %s of thread %s: %w", o.Output.ID, s.threadID, err)
					}
					// An event the output can never take (too large, say)
					// is dropped with a log line: the reply is in history,
					// and retrying would block the thread for nothing.
					s.observe(ctx, Event{Type: EventMessageDropped, ThreadID: s.threadID,
						MessageIDs: []string{o.Output.ID}, Reason: "output refused for good", Err: err})
				}
			}
		case o.Cancel != nil:
			s.cancel(ctx, o.Cancel)
		}
	}
	if len(s.st.Outbox) > 0 {
		s.dropOutbox()
	}
	p := s.st.Pending
	if p == nil || p.Dispatched {
		return false, nil
	}
	entry, ok, err := s.lookup(ctx, p.Name)
	if err != nil {
		// Retry the slice: closing the call now would give the model an
		// error for what may be a passing outage.
		return false, err
	}
	if !ok || entry.Async == nil {
		// The toolset changed since the call was recorded.
		s.closePending(Item{Kind: ItemToolResult, CallID: p.ID, Name: p.Name, IsError: true,
			Text: fmt.Sprintf("error: tool %q is no longer available", p.Name)})
		return true, nil
	}
	inv := Invocation{ThreadID: s.threadID, CallID: p.ID, Name: p.Name, Args: p.Args, Ancestors: ancestors(s.st.Stack),
		Class: s.st.Class.OrDefault(), Incarnation: s.st.Incarnation}
	if v, err := s.resolveAgent(); err == nil && v != nil {
		inv.Agent, inv.AgentNetwork = v.Agent.Name, v.Agent.Network
	}
	if err := s.crash(CrashBeforeDispatch); err != nil {
		return false, err
	}
	t0, timed := s.startTimer(EventToolDispatched)
	dctx, sp := s.dispatchSpan(ctx, &inv)
	err = entry.Async.Dispatch(dctx, inv)
	endSpan(sp, err)
	if err != nil {
		var rej *ToolRejectedError
		if errors.As(err, &rej) {
			s.closePending(Item{Kind: ItemToolResult, CallID: p.ID, Name: p.Name, IsError: true, Text: "error: " + rej.Error()})
			return true, nil
		}
		return false, fmt.Errorf("runtime: dispatching %s (%s) for thread %s: %w", p.ID, p.Name, s.threadID, err)
	}
	s.timedEvent(ctx, Event{Type: EventToolDispatched, ThreadID: s.threadID, ToolCallID: p.ID, ToolName: p.Name}, t0, timed)
	s.res.Dispatched = p.ID
	if err := s.crash(CrashAfterDispatch); err != nil {
		return false, err
	}
	pp := *p
	pp.Dispatched, pp.Trace = true, inv.Trace
	if pp.Deadline, err = s.armLiveness(ctx, p, entry); err != nil {
		return false, err
	}
	s.st.Pending = &pp
	s.changed()
	return false, nil
}

func (s *slice) cancel(ctx context.Context, p *PendingCall) {
	entry, ok, err := s.lookup(ctx, p.Name)
	if err != nil || !ok {
		return // best effort
	}
	var c Canceler
	if entry.Async != nil {
		c, _ = entry.Async.(Canceler)
	}
	if c == nil {
		return
	}
	if err := c.Cancel(ctx, s.threadID, p.ID); err != nil {
		s.observe(ctx, Event{Type: EventToolDispatched, ThreadID: s.threadID, ToolCallID: p.ID, ToolName: p.Name,
			Reason: "cancel failed (best effort)", Err: err})
	}
}

// lookup finds a tool in the thread's toolset. An error means the toolset
// could not be loaded (a tool server down): not the same as a missing tool.
func (s *slice) lookup(ctx context.Context, name string) (ToolEntry, bool, error) {
	if name == InjectedToolName {
		return ToolEntry{}, false, nil
	}
	ts, err := s.toolsetFor(ctx)
	if err != nil {
		return ToolEntry{}, false, err
	}
	e, ok := ts.Lookup(name)
	return e, ok, nil
}

// closePending gives the pending call its one result and folds in what was
// deferred behind it.
func (s *slice) closePending(result Item) {
	s.appendItem(result)
	s.st.Pending = nil
	s.changed()
	deferred := s.st.Deferred
	s.st.Deferred = nil
	for _, m := range deferred {
		if s.mutateLosesDeferred(m) {
			continue
		}
		s.foldEvent(m)
	}
}

func ancestors(stack []string) []string {
	if len(stack) <= 1 {
		return nil
	}
	return stack[:len(stack)-1]
}

func ids(ms []Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// backoff sleeps before model attempt n (n ≥ 1), with full jitter, or
// returns early when ctx ends or its deadline would pass (internal/retry).
func (s *slice) backoff(ctx context.Context, n int) error {
	return retry.Backoff{Base: s.lim.RetryBase}.Wait(ctx, n)
}

// stamp gives a message the class of the thread it is for when its sender
// left it empty: this thread's own class, its parent's, or (for the
// children it spawned, which inherit it) its own again. Messages to
// threads created by this slice are stamped where they are built.
func (s *slice) stamp(m Message) Message {
	if m.Class != "" {
		return m
	}
	switch {
	case m.ThreadID == s.threadID:
		m.Class = s.st.Class.OrDefault()
	case m.ThreadID == s.st.Parent && s.st.Parent != "":
		m.Class = s.st.ParentClass.OrDefault()
	case slices.Contains(s.st.Children, m.ThreadID):
		m.Class = s.st.Class.OrDefault()
	}
	return m
}
