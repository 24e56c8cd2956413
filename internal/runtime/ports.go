package runtime

import (
	"context"
	"fmt"
	"time"
)

// HistoryStore keeps threads: their append-only history and their state.
// Implementations: internal/local (memory), internal/dsql (Aurora DSQL).
// Both pass the conformance suite in internal/runtime/storetest.
type HistoryStore interface {
	// Load returns the thread's full view in one call. A thread that was
	// never written loads as an empty root thread with Version 0. The
	// returned Thread and its Items slice belong to the caller, who may
	// append to it; the strings in it must stay valid and unchanged.
	Load(ctx context.Context, threadID string) (*Thread, error)
	// Commit applies c atomically, or fails with ErrConflict when the stored
	// version is not c.Expected.
	Commit(ctx context.Context, c *Commit) error
}

// LeaseLoader is implemented by history stores that can lend the loading
// slice the stored view itself (Thread.Lease), so that it appends in place
// instead of copying. The engine uses LoadLeased instead of Load when a store
// has it, passes the lease back in every Commit, and calls Release when the
// slice ends, whatever its outcome; the leased Thread is not used after
// Release (a store may hand the same Thread to the next leased load). Plain
// Load never leases. The State of a
// leased load may share its slices and pointers with the store (with their
// capacity clipped): the caller changes it copy-on-write only, appending
// to or replacing slices and never writing an element or a pointed-to
// value in place, as the engine does with its working state.
//
// A leased load is a slice's load: it may leave out the items before
// State.ViewStart (Thread.Base = State.ViewStart), which the model never
// sees; plain Load returns the whole view.
type LeaseLoader interface {
	LoadLeased(ctx context.Context, threadID string) (*Thread, error)
	Release(threadID string, lease any)
}

// ViewLoader is implemented by history stores that can load a thread for
// a slice without the history before its latest compaction point: Items
// start at State.ViewStart (Thread.Base) or at 0, Inherited counts the
// inherited items among them. The engine uses it instead of Load when a
// store has it and does not lease. History before the point stays stored
// and readable with Load.
type ViewLoader interface {
	LoadView(ctx context.Context, threadID string) (*Thread, error)
}

// LoadForSlice loads a thread as a slice does: leased when h leases (the
// caller then calls LeaseLoader.Release with the Thread's Lease when done;
// leaser is nil otherwise), else through ViewLoader or InputViewLoader
// when h has one, else with Load. The model's view of the result is ModelView(th.Items,
// th.Inherited, th.Base).
func LoadForSlice(ctx context.Context, h HistoryStore, threadID string) (th *Thread, leaser LeaseLoader, err error) {
	if ll, ok := h.(LeaseLoader); ok {
		th, err = ll.LoadLeased(ctx, threadID)
		if err == nil && th.Lease != nil {
			leaser = ll
		}
		return th, leaser, err
	}
	if vl, ok := h.(ViewLoader); ok {
		th, err = vl.LoadView(ctx, threadID)
		return th, nil, err
	}
	if il, ok := h.(InputViewLoader); ok {
		th, _, err = il.LoadViewFor(ctx, threadID, nil)
		return th, nil, err
	}
	th, err = h.Load(ctx, threadID)
	return th, nil, err
}

// InputViewLoader is a ViewLoader that also answers, in the same load,
// ConsumedChecker's question for the history it leaves out: consumed[i]
// reports whether an own item of the thread before Thread.Base recorded
// inputs[i] as its input. A store whose loads are round trips (DSQL) so
// recognises a message delivered again long after the thread's latest
// compaction point without a second one. The engine passes the IDs of
// the batch it is about to fold.
type InputViewLoader interface {
	LoadViewFor(ctx context.Context, threadID string, inputs []string) (th *Thread, consumed []bool, err error)
}

// LoadForBatch is LoadForSlice for a slice about to fold the messages
// with the given IDs: when the store answers ConsumedChecker's question
// with its load (InputViewLoader, and it does not lease), consumed holds
// the answer for inputs (Thread.Base as the point); else it is nil.
func LoadForBatch(ctx context.Context, h HistoryStore, threadID string, inputs []string) (th *Thread, leaser LeaseLoader, consumed []bool, err error) {
	if _, ok := h.(LeaseLoader); !ok {
		if il, ok := h.(InputViewLoader); ok {
			th, consumed, err = il.LoadViewFor(ctx, threadID, inputs)
			if err == nil && len(consumed) != len(inputs) {
				err = fmt.Errorf("runtime: loading thread %s: the store answered for %d of %d inputs", threadID, len(consumed), len(inputs))
			}
			return th, nil, consumed, err
		}
	}
	th, leaser, err = LoadForSlice(ctx, h, threadID)
	return th, leaser, nil, err
}

// ConsumedChecker is implemented by history stores whose slice loads leave
// out history (Thread.Base > 0): Consumed reports, for each ID, whether an
// own item of the thread before view position before recorded it as its
// input. The engine asks it for the messages of a batch the loaded items
// do not account for, so that a message consumed before the latest
// compaction point and delivered again is still recognised. A store
// without it gets the same answer from a full Load.
type ConsumedChecker interface {
	Consumed(ctx context.Context, threadID string, before int, ids []string) ([]bool, error)
}

// DedupStore remembers which message IDs a thread has processed. It is the
// fast path in front of the authoritative check against history.
type DedupStore interface {
	// Seen reports, for each ID, whether it was marked for the thread.
	Seen(ctx context.Context, threadID string, ids []string) ([]bool, error)
	// Mark records the IDs as processed. Marking twice is not an error.
	Mark(ctx context.Context, threadID string, ids []string) error
}

// Queue delivers messages to threads' input queues.
type Queue interface {
	Send(ctx context.Context, msgs ...Message) error
}

// Output receives what agents say to the outside world.
type Output interface {
	Publish(ctx context.Context, ev OutputEvent) error
}

// Timer is a wake-up request: deliver Message at At.
type Timer struct {
	ThreadID string
	CallID   string
	At       time.Time
	Message  Message
}

// Timers schedules wake-ups. Scheduling the same (thread, call) twice must
// not deliver two different wake-ups (the message ID is the same anyway).
type Timers interface {
	Schedule(ctx context.Context, t Timer) error
	Cancel(ctx context.Context, threadID, callID string) error
}

// Model streams one completion into w.
//
// A returned error aborts the completion: the engine discards what was
// streamed and retries with backoff, unless the error is permanent
// (see Permanent). req and what it points to are valid during the call
// only (the engine reuses the request).
type Model interface {
	Complete(ctx context.Context, req *CompletionRequest, w TurnWriter) error
}

// CompletionRequest is what a model gets for one completion.
//
// Its ID and Turn are derived when a model first asks for them: most
// models never do, and deriving both for every completion (a SHA-256 and
// a pass over the thread's whole history) was 7% of a simple completion's
// CPU. A caller that builds a request itself sets them with SetID and
// SetTurn.
type CompletionRequest struct {
	ThreadID string
	// History is what the model should see: the thread's view, starting
	// from the latest summary when the thread was compacted.
	History []Item
	// Inherited is how many of History come from the thread's ancestors.
	Inherited int
	Tools     []ToolSpec
	// System is the system prompt: the instructions of the agent the
	// thread is bound to ("" when the deployment defines no agents).
	System string
	// Agent names that agent, for providers' logs and metrics.
	Agent string
	// Model is the thread's model (ThreadState.Model); "" is the default.
	// A deployment with several models routes on it.
	Model string

	id      string // ID, once derived or set (idSet)
	idSet   bool
	engine  bool   // built by the engine: ID derives from the fields below
	version int64  // the committed version and the slice's
	n       int    // completion count the ID derives from
	own     []Item // the thread's own items (Turn counts them)
	// turnBase and joined describe the own items a partial load left
	// out (Thread.Base): how many completions they hold, and whether the
	// last of them is an assistant item (so a tool call right after it
	// belongs to that completion).
	turnBase int
	joined   bool
	turn     int // Turn when turnSet
	turnSet  bool
	pending  []Item // own items before the completion, not committed yet
	at       int    // own position of pending[0]
}

// Uncommitted returns the thread's own items that precede this completion
// in history but are not committed yet (what the slice folded in or ran
// before it: a user message, a tool result), and the own position of the
// first. A live view that streams the completion's text shows them first,
// so that it keeps history's order; the slice commits them with the turn.
// They belong to the request: valid during the call only.
func (r *CompletionRequest) Uncommitted() ([]Item, int) { return r.pending, r.at }

// ID is the completion's ID. It is deterministic: the same slice retried
// asks for the same ID. Like the request, it is the model's during the
// call: the first call remembers the ID, so two goroutines must not make
// it at once.
func (r *CompletionRequest) ID() string {
	if !r.idSet && r.engine {
		r.id, r.idSet = completionID(r.ThreadID, r.version, r.n), true
	}
	return r.id
}

// SetID sets the ID of a request built outside the engine.
func (r *CompletionRequest) SetID(id string) { r.id, r.idSet = id, true }

// Turn is how many completions the thread has already committed in its
// own history (0 for its first), whatever compaction has hidden.
func (r *CompletionRequest) Turn() int {
	if r.turnSet {
		return r.turn
	}
	return r.turnBase + countCompletions(r.own, r.joined)
}

// SetTurn sets the Turn of a request built outside the engine.
func (r *CompletionRequest) SetTurn(n int) { r.turn, r.turnSet = n, true }

// TurnWriter receives a completion as it streams.
type TurnWriter interface {
	Text(s string)
	Reasoning(s string)
	// ToolCall records a complete tool call. id may be "" (the engine mints
	// a deterministic one).
	ToolCall(id, name, args string)
	Usage(u Usage)
}

// ReasoningBlockWriter is implemented by the engine's TurnWriter. Providers
// whose reasoning must be sent back verbatim (signed or redacted blocks)
// record each block with it, in addition to streaming the text through
// TurnWriter.Reasoning.
type ReasoningBlockWriter interface {
	ReasoningBlock(b ReasoningBlock)
}
