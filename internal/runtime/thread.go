package runtime

import (
	"slices"
	"time"
)

// Thread is everything a slice needs of one thread, as one load returns it.
type Thread struct {
	ID    string
	State ThreadState
	// Items is the thread's full view in order: the history inherited from its
	// ancestors up to their spawn points (or the latest summary that covers
	// it), then the thread's own items.
	Items []Item
	// Inherited is how many of Items come from ancestors.
	Inherited int
	// Base is the position in the thread's full view of Items[0]: 0 when
	// Items is the whole view (Load), State.ViewStart when a store loaded
	// only the model's view for a slice (LeaseLoader, ViewLoader).
	Base int
	// Lease is an opaque token a store may hand out with a load; the
	// engine passes it back in every Commit of the slice and to
	// LeaseLoader.Release when the slice ends. Stores use it to let the
	// one slice that owns a thread append to its view in place.
	Lease any
}

// Own returns the thread's own items.
func (t *Thread) Own() []Item { return t.Items[t.Inherited:] }

// ThreadState is the small mutable record beside a thread's append-only
// history. It is replaced whole by each commit.
type ThreadState struct {
	// Version counts commits; 0 means the thread has never been written.
	Version int64 `json:"version"`
	// Length is the number of own history items.
	Length int `json:"length"`
	// Parent is the parent thread's ID; "" for a root thread.
	Parent string `json:"parent,omitempty"`
	// Stack is the thread's ancestry, root first, ending with the thread itself.
	Stack []string `json:"stack,omitempty"`
	// SpawnCall is the parent's spawn_thread call that created this thread.
	SpawnCall string `json:"spawn_call,omitempty"`
	Closed    bool   `json:"closed,omitempty"`
	// Temporary marks a child created to process one subscription event.
	Temporary bool `json:"temporary,omitempty"`
	// Pending is the asynchronous call awaiting its result, if any.
	Pending *PendingCall `json:"pending,omitempty"`
	// Outbox holds what a committed slice still has to send. Entries are sent
	// after the commit and cleared by the next commit; a slice that loads a
	// thread with a non-empty outbox sends it again first (same IDs).
	Outbox []OutboxEntry `json:"outbox,omitempty"`
	// Deferred holds events that arrived while a call was pending; they are
	// folded in once the call has its result.
	Deferred []Message `json:"deferred,omitempty"`
	// Subscriptions lists active subscriptions by the call that started them.
	Subscriptions []Subscription `json:"subscriptions,omitempty"`
	// Tokens is the latest completion's total token count (for compaction).
	Tokens int `json:"tokens,omitempty"`
	// Children lists the threads this thread spawned, in order.
	Children []string `json:"children,omitempty"`
	// Open lists the children spawned with spawn_thread whose close the
	// thread has not learned of yet (Limits.MaxChildren counts them).
	// Children spawned before the list existed are not in it.
	Open []string `json:"open,omitempty"`
	// Compacting is the compaction child at work on this thread, if any.
	Compacting string `json:"compacting,omitempty"`
	// Compaction marks a child whose one job is to summarise its history
	// up to Covers (a position in its view) for its parent.
	Compaction bool `json:"compaction,omitempty"`
	Covers     int  `json:"covers,omitempty"`
	// ViewStart is the position in the thread's full view where the
	// model's view begins: what the latest summary in the view covers
	// (0: no summary, or not known). A store that loads a thread for a
	// slice may leave out the items before it (Thread.Base). Set when a
	// summary is folded in, and for a child at its creation from the view
	// it inherits.
	ViewStart int `json:"view_start,omitempty"`
	// Reach is how many ancestors the thread's view reaches past its view
	// start, at most (an upper bound: the parent's Reach plus one when the
	// child's view starts in the parent's inherited part, else one; 0 for
	// a root thread and in states written before it existed). A thread
	// whose view reaches more than Limits.MaxInheritedDepth ancestors is
	// folded: it compacts (maybeCompact), and its summary covers its
	// inherited part, so that its later slices load none of it.
	Reach int `json:"reach,omitempty"`
	// Class is the thread's priority class, fixed at creation ("" in
	// states written before classes existed: interactive).
	Class Class `json:"class,omitempty"`
	// ParentClass is the parent's class, so reports and summaries are
	// routed to the parent's queue without reading the parent.
	ParentClass Class `json:"parent_class,omitempty"`
	// Agent is the agent the thread is bound to ("" when the deployment
	// defines no agents), fixed when the thread is created.
	Agent string `json:"agent,omitempty"`
	// AgentHash is the version (Agent.Hash) of the definition the thread's
	// latest completion ran with; a slice that finds another version
	// current records the change in history before its first completion.
	AgentHash string `json:"agent_hash,omitempty"`
	// Usage is the thread's cumulative token usage, committed with each
	// turn (so a retried slice never counts a completion twice).
	Usage Usage `json:"usage,omitzero"`
	// Model is the model the thread runs, set by a KindModel message (the
	// switch is also recorded in history); "" is the deployment's default.
	Model string `json:"model,omitempty"`
	// ModelWait is set while the thread waits for its model provider to
	// come back (provider_wait.go).
	ModelWait *ModelWait `json:"model_wait,omitempty"`
	// Budget is the thread's own limit, its cost and its wait for a
	// person to raise a limit (budget.go); nil when none was ever needed.
	Budget *BudgetState `json:"budget,omitempty"`
	// Incarnation tells this thread apart from every other thread that had
	// or will have its ID (a store wiped, a thread recreated): fixed when
	// the thread is created (a root thread's first commit, a child's in
	// its parent's commit) and mixed into every ID the runtime mints for
	// the outside world from the thread's ID and a position (tool call
	// IDs, and with them child threads, callback URLs, wake-ups), so a new
	// conversation never reissues an earlier one's IDs. A root thread's is
	// random (Engine.Entropy), committed with the thread's first items,
	// before any ID derived from it leaves the slice; a child's is derived
	// from its parent's. "" in states written before incarnations existed:
	// IDs are derived as they were then.
	Incarnation string `json:"incarnation,omitempty"`
	// Fork is set on a root thread forked from another (fork.go): its
	// inherited history is the source's view up to Fork.At, shared, not
	// copied, as a child inherits its parent's. nil for every other thread.
	Fork *ForkPoint `json:"fork,omitempty"`
	// Upgrade is the thread's agent upgrade policy: "" (UpgradeLatest,
	// each slice runs the current definition) or UpgradePinned (the
	// version in AgentHash until a person upgrades it).
	Upgrade string `json:"upgrade,omitempty"`
}

// Archivable reports whether a store may move the thread to its cold
// form (compressed, off the hot path) at once, however recently it
// committed: a closed child, whose reports live on in its parent and
// whose history stays readable. A commit to it (a message it refuses)
// brings it back as any cold thread.
func (s *ThreadState) Archivable() bool { return s.Closed && s.Parent != "" }

// Clone returns a deep copy of s, so a slice can build the next state without
// touching the loaded one.
func (s ThreadState) Clone() ThreadState {
	c := s
	c.Stack = append([]string(nil), s.Stack...)
	if s.Pending != nil {
		p := *s.Pending
		c.Pending = &p
	}
	c.Outbox = append([]OutboxEntry(nil), s.Outbox...)
	c.Deferred = append([]Message(nil), s.Deferred...)
	c.Subscriptions = append([]Subscription(nil), s.Subscriptions...)
	c.Children = append([]string(nil), s.Children...)
	c.Open = slices.Clone(s.Open)
	if s.Budget != nil {
		b := *s.Budget
		c.Budget = &b
	}
	if s.ModelWait != nil {
		w := *s.ModelWait
		c.ModelWait = &w
	}
	if s.Fork != nil {
		f := *s.Fork
		c.Fork = &f
	}
	return c
}

// PendingCall is an asynchronous tool call that has been recorded in history
// and is waiting for its result.
type PendingCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args,omitempty"`
	// Dispatched is false until the call has been sent successfully; a slice
	// that loads a thread with an undispatched call sends it first.
	Dispatched bool `json:"dispatched,omitempty"`
	// Deadline is when the call is given up on (see Liveness); zero: never.
	Deadline time.Time `json:"deadline,omitzero"`
	// Trace is the W3C traceparent of the call's dispatch span ("" when
	// not traced): a liveness check sent after a restart
	// (LivenessChecks) carries it, so the slice that asks the tool joins
	// the call's trace instead of starting one of its own.
	Trace string `json:"trace,omitempty"`
}

// Subscription is an active subscription started by a tool call.
type Subscription struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	Args   string `json:"args,omitempty"`
	// Trace is the trace context of the call that started it
	// (PendingCall.Trace), for its liveness checks.
	Trace string `json:"trace,omitempty"`
}

// OutboxEntry is one message or output event a committed slice must send.
type OutboxEntry struct {
	Message *Message     `json:"message,omitempty"`
	Output  *OutputEvent `json:"output,omitempty"`
	// Cancel asks a tool to cancel an interrupted call (best effort).
	Cancel *PendingCall `json:"cancel,omitempty"`
}

// OutputEvent is what the runtime tells the outside world: an agent's reply,
// an error, or a notice (an OAuth URL, a choice to make).
type OutputEvent struct {
	ID       string `json:"id"`
	ThreadID string `json:"thread_id"`
	Kind     string `json:"kind"` // "reply", "error", "notice", "view", ...
	Text     string `json:"text"`
	// Agent is the agent that replied, and Usage the thread's cumulative
	// token usage when it did (replies only; empty without agents/usage).
	Agent string `json:"agent,omitempty"`
	Usage *Usage `json:"usage,omitempty"`
}

// ChildThread is a thread created by a commit (spawn_thread, a threaded
// subscription event).
type ChildThread struct {
	ID string
	// SpawnAt is the length of the parent's full view that the child
	// inherits: the parent's items [0, SpawnAt).
	SpawnAt int
	State   ThreadState
}

// Commit is one atomic write to a thread: items appended to its history, its
// new state, and the children it creates.
type Commit struct {
	ThreadID string
	// Expected is the version the slice loaded; the commit fails with
	// ErrConflict if the stored version differs.
	Expected int64
	// Append may alias the committing slice's view (its capacity is
	// clipped): a store copies the items it keeps, or keeps the slots
	// themselves when they are already the next slots of what it stores
	// (a leased view).
	Append []Item
	// State replaces the thread's state. Its Version must be Expected+1 and
	// its Length the old length plus len(Append). A store may keep State's
	// slices and pointers as they are: the committer never modifies their
	// elements afterwards (the engine changes state copy-on-write).
	State    ThreadState
	Children []ChildThread
	// Inputs lists the message IDs this commit consumes (also recorded on
	// the appended items).
	Inputs []string
	// Lease is the Thread.Lease of the load this commit follows.
	Lease any
	// SentOnly marks the commit that records only that the outbox
	// committed at Expected went out in full (the outbox cleared, the call
	// marked dispatched with its deadline; nothing appended, no children).
	// A store may answer it before it is durable, provided it becomes
	// durable before any later commit of the thread: lost in a crash, it
	// costs a resend of that outbox with the same IDs, which delivery and
	// dispatch allow anyway.
	SentOnly bool
}
