package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// ToolSpec describes a tool to a model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Invocation is one tool call as a tool sees it.
type Invocation struct {
	ThreadID string
	CallID   string
	Name     string
	Args     string
	// Ancestors is the thread stack from the root to the parent; empty for a
	// root thread.
	Ancestors []string
	UserID    string
	// Agent is the name of the agent the calling thread runs as and
	// AgentNetwork its definition's Network ("" when the engine has no
	// agents); the RAP dispatcher sends them as the invocation's
	// x-agentslice-agent extension.
	Agent, AgentNetwork string
	// Class is the calling thread's priority class; tools stamp it on the
	// messages they send back (results, wake-ups) so they reach the
	// thread's queue.
	Class Class
	// Incarnation is the calling thread's (ThreadState.Incarnation);
	// callback URLs are signed for it, so one issued to an earlier thread
	// of the same ID is refused.
	Incarnation string
	// Trace is the W3C traceparent of the dispatch span ("" when the
	// engine does not trace). A tool hands it on with what it sends back
	// (the RAP dispatcher signs it into the callback URL and sends it as
	// the traceparent header; a sleep puts it on its wake-up), so the
	// slice the result wakes continues the trace.
	Trace string
}

// Tool is an asynchronous tool: Dispatch sends the call and returns without
// waiting for the result, which arrives later as a KindToolResult message.
// Dispatch may be called more than once for the same CallID (at-least-once);
// tools deduplicate by it.
//
// A *ToolRejectedError means the call can never succeed; the model gets an
// error result. Any other error is retried by retrying the slice.
type Tool interface {
	Dispatch(ctx context.Context, inv Invocation) error
}

// Canceler is implemented by tools that can be told a call was interrupted.
// It is best effort: errors are logged, never retried.
type Canceler interface {
	Cancel(ctx context.Context, threadID, callID string) error
}

// ArgsValidator is implemented by tools that check arguments before the call
// is recorded; a failure becomes an error result for the model.
type ArgsValidator interface {
	ValidateArgs(args string) error
}

// SyncTool runs inline in a slice, against the stores, in microseconds.
type SyncTool interface {
	Run(ctx context.Context, env *SyncEnv, inv Invocation) (ToolOutput, error)
}

// ToolOutput is a tool's result as the model sees it.
type ToolOutput struct {
	Text    string
	IsError bool
}

// Toolset is what a thread may call. Implemented by *Toolbox; RAP loads one
// per root thread.
type Toolset interface {
	Lookup(name string) (ToolEntry, bool)
	Specs() []ToolSpec
}

// ToolSource picks the toolset for a thread.
type ToolSource interface {
	Toolset(ctx context.Context, t *Thread) (Toolset, error)
}

// ThreadCloser is implemented by tool sources that want to know when a
// thread closes (RAP notifies its tool servers). It is best effort and must
// not block.
type ThreadCloser interface {
	CloseThread(threadID string)
}

// ToolEntry is one registered tool: exactly one of Async and Sync is set.
type ToolEntry struct {
	Spec  ToolSpec
	Async Tool
	Sync  SyncTool
	// Interruptible calls (sleeps) are ended by an incoming event as well
	// as by a user message; other pending calls defer events until their
	// result arrives.
	Interruptible bool
	// Toolset names the toolset or built-in group the tool belongs to, which
	// an Agent's Tools allow-list refers to ("" for tools outside any).
	Toolset string
}

// Toolbox is a fixed set of tools. It implements Toolset and ToolSource.
type Toolbox struct {
	entries map[string]ToolEntry
	specs   []ToolSpec
}

// NewToolbox returns an empty toolbox.
func NewToolbox() *Toolbox { return &Toolbox{entries: map[string]ToolEntry{}} }

// Add registers a tool. It fails on an empty or duplicate name, on the
// reserved injected-event name, or when not exactly one of Async/Sync is set.
func (tb *Toolbox) Add(e ToolEntry) error {
	name := e.Spec.Name
	switch {
	case name == "":
		return fmt.Errorf("runtime: tool with an empty name")
	case name == InjectedToolName:
		return fmt.Errorf("runtime: tool name %q is reserved", name)
	case (e.Async == nil) == (e.Sync == nil):
		return fmt.Errorf("runtime: tool %q must be either asynchronous or synchronous", name)
	}
	if _, dup := tb.entries[name]; dup {
		return fmt.Errorf("runtime: tool %q registered twice", name)
	}
	if len(e.Spec.InputSchema) == 0 {
		e.Spec.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	tb.entries[name] = e
	tb.specs = append(tb.specs, e.Spec)
	sort.Slice(tb.specs, func(i, j int) bool { return tb.specs[i].Name < tb.specs[j].Name })
	return nil
}

// MustAdd is Add for set-up code; it panics on error.
func (tb *Toolbox) MustAdd(e ToolEntry) *Toolbox {
	if err := tb.Add(e); err != nil {
		panic(err)
	}
	return tb
}

// Lookup returns the tool registered under name.
func (tb *Toolbox) Lookup(name string) (ToolEntry, bool) {
	e, ok := tb.entries[name]
	return e, ok
}

// Specs returns the tools' specs sorted by name.
func (tb *Toolbox) Specs() []ToolSpec { return tb.specs }

// Toolset returns tb itself for every thread.
func (tb *Toolbox) Toolset(context.Context, *Thread) (Toolset, error) { return tb, nil }

// SyncEnv is what a synchronous tool may do besides returning a result. Its
// effects are committed atomically with the turn and sent after the commit.
type SyncEnv struct {
	Thread *Thread
	// State is the state being built for the commit; tools may change it.
	State *ThreadState
	// Position is the length of the thread's full view before the tool
	// call item: the spawn point of a child created now (a child inherits
	// the history up to, not including, the call that spawned it).
	Position int
	// CallID is the ID of the call being run.
	CallID string
	Now    time.Time
	// MaxChildren is Limits.MaxChildren (spawn_thread's cap).
	MaxChildren int
	// Agent is the version of the agent the thread runs as, and Agents
	// resolves others (spawn_thread's agent argument); both nil when the
	// deployment defines no agents.
	Agent    *AgentVersion
	Agents   Agents
	children []ChildThread
	outbox   []OutboxEntry
}

// CreateChild records a child thread to create with the commit.
func (env *SyncEnv) CreateChild(c ChildThread) { env.children = append(env.children, c) }

// Send records a message to send once the commit has succeeded.
func (env *SyncEnv) Send(m Message) {
	if m.V == 0 {
		m.V = MessageVersion
	}
	env.outbox = append(env.outbox, OutboxEntry{Message: &m})
}

// CancelCall records a best-effort cancel notice for a tool's call.
func (env *SyncEnv) CancelCall(id, name string) {
	env.outbox = append(env.outbox, OutboxEntry{Cancel: &PendingCall{ID: id, Name: name}})
}
