package server

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// StreamEvent is one event of the server's event streams. History events
// (Seq > 0) are derived from committed history, so they are exactly the
// same whether delivered live or replayed; the others are live only.
// docs/serve.md ("Events") lists the kinds.
type StreamEvent struct {
	// ID is the event's stable ID: "{thread}#{position}" for history
	// events (".usage" for the usage of the item at that position), the
	// runtime's output ID for outputs, "{completion}.{n}" for deltas.
	ID       string `json:"id"`
	ThreadID string `json:"thread_id"`
	Kind     string `json:"kind"`
	// At is, for history events, the item's time (runtime.Item.At); for
	// live events, when the server told them (the engine's clock).
	At runtime.Stamp `json:"at,omitempty"`
	// Seq is, for history events, the item's own-history position plus
	// one: the stream's replay cursor (the SSE id). 0 for live-only events.
	Seq int `json:"seq,omitempty"`
	// ahead marks a history event published before its commit, ahead of
	// the deltas of the completion that follows it; the stream sends it
	// without a cursor and skips its committed copy (see serveEvents).
	ahead     bool
	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
	// Tool, CallID and Args describe the tool call an event is about.
	Tool    string            `json:"tool,omitempty"`
	CallID  string            `json:"call_id,omitempty"`
	Args    string            `json:"args,omitempty"`
	IsError bool              `json:"is_error,omitempty"`
	Content []runtime.Content `json:"content,omitempty"`
	// Display is a tool result's display_as, rendered (the first segment
	// this runtime can show; for people, not the model).
	Display []rap.Display  `json:"display,omitempty"`
	Usage   *runtime.Usage `json:"usage,omitempty"`
	// Child is the child thread an event spawned, reports from or hands an
	// event to.
	Child string `json:"child,omitempty"`
	// Input is the ID of the message a history event consumed.
	Input string `json:"input,omitempty"`
	// Choice is, on a "user_choice" event, the choice the tool asks (a
	// later "choice_answered" event of the same call answers it).
	Choice *choiceView `json:"choice,omitempty"`
	// CompletionID and Index order the deltas of one completion; Index 0
	// starts (or restarts, after a retry) the completion's text.
	CompletionID string `json:"completion_id,omitempty"`
	Index        int    `json:"index,omitempty"`
	// State is the thread's status after a commit ("state" events).
	State *statusView `json:"state,omitempty"`
	// Message is a dead-lettered message ("dead_letter" events).
	Message *runtime.Message `json:"message,omitempty"`
}

// choiceView is a pending user_choice as the API shows it.
type choiceView struct {
	CallID  string   `json:"call_id"`
	Prompt  string   `json:"prompt"`
	Choices []string `json:"choices"`
	Default *int     `json:"default,omitempty"`
	// id and responseURL are where the answer goes (never shown).
	id, responseURL string
	// budget marks a budget pause's choice: the answer goes to the
	// thread alone (no tool asked it).
	budget bool
}

// statusView is a thread's status as "state" events carry it.
type statusView struct {
	Status string `json:"status"`
	// Reason says why a thread is failed or waiting for its provider.
	Reason        string                 `json:"reason,omitempty"`
	Pending       *runtime.PendingCall   `json:"pending,omitempty"`
	Subscriptions []runtime.Subscription `json:"subscriptions,omitempty"`
	Version       int64                  `json:"version"`
	// Until is when a sleeping thread wakes up, when known.
	Until *time.Time `json:"until,omitempty"`
}

// sleepTools are the built-in tools whose calls are sleeps.
var sleepTools = runtime.SleepToolNames

// historyEvents turns a thread's own items, the first of which is at
// own-history position base, into stream events. It is a pure function of
// the items, so replay equals live. A result's display segment is the
// marker the engine commits right after it (runtime.DisplayMarkerName).
// A synthetic event's injected call is looked up among items, where the
// engine always puts it (it appends the call and its result together).
func (s *Server) historyEvents(thread string, base int, items []runtime.Item) []StreamEvent {
	out := make([]StreamEvent, 0, len(items)+1)
	for i := range items {
		it := &items[i]
		pos := base + i
		ev := StreamEvent{ID: thread + "#" + strconv.Itoa(pos), ThreadID: thread, At: it.At, Seq: pos + 1, Input: it.Input,
			Text: it.Text, CallID: it.CallID, Tool: it.Name, IsError: it.IsError, Content: it.Content}
		switch it.Kind {
		case runtime.ItemUser:
			ev.Kind = "message"
		case runtime.ItemAssistant:
			ev.Kind, ev.Reasoning, ev.Usage = "turn", it.Reasoning, it.Usage
		case runtime.ItemToolCall:
			if it.Name == runtime.InjectedToolName {
				continue // shown with its result, which carries the payload
			}
			ev.Kind, ev.Args, ev.Usage = "tool_call", it.Args, it.Usage
			if sleepTools[it.Name] {
				ev.Kind = "sleep"
			}
		case runtime.ItemToolResult:
			ev.Kind = "tool_result"
			switch {
			case it.Name == runtime.InjectedToolName:
				ev.Kind = "subscription_event"
				orig := injectedOrigin(items[:i], it.CallID)
				ev.Tool, ev.CallID = orig.Name, orig.ID
				switch {
				case orig.Name == "spawn_thread":
					ev.Kind, ev.Child = "child_report", runtime.ChildThreadID(thread, orig.ID)
				case strings.HasPrefix(it.Input, "res_") || strings.HasPrefix(it.Input, "wake_"):
					ev.Kind = "late_result"
				}
			case sleepTools[it.Name]:
				ev.Kind = "wake"
			case it.Name == "spawn_thread" && !it.IsError:
				ev.Kind, ev.Child = "child_spawned", runtime.ChildThreadID(thread, it.CallID)
			}
			if ev.Kind != "child_spawned" {
				ev.Display = displayBefore(items[:i], ev.CallID)
			}
		case runtime.ItemMarker:
			switch {
			case runtime.IsFailure(it):
				ev.Kind, ev.Args = "failed", it.Args // a completion that failed for good
			case it.Name == runtime.DisplayMarkerName:
				continue // shown with its result
			case it.Name == runtime.ViewMarkerName:
				ev.Kind, ev.Text = "view", it.Args
			case it.Name == runtime.AnswerMarkerName:
				ev.Kind, ev.Args = "choice_answered", it.Args
			case it.CallID == "" && it.Text == "continue":
				ev.Kind = "continue"
			case strings.HasPrefix(it.Text, "stopped by the user"):
				ev.Kind = "stopped"
			case strings.HasPrefix(it.Text, "closed by the user"):
				ev.Kind = "closed"
			case strings.HasPrefix(it.Text, "model switched to "):
				ev.Kind = "model_switched"
			case strings.HasPrefix(it.Text, "agent switched to "):
				ev.Kind = "agent_switched"
			case it.Name == runtime.AgentMarkerName:
				ev.Kind = "agent_version"
			case strings.HasPrefix(it.Text, "event handed to thread "):
				ev.Kind, ev.Child = "subscription_event", strings.TrimPrefix(it.Text, "event handed to thread ")
			case it.Name == runtime.ChoiceMarkerName && it.Input == "":
				// A budget pause's choice (runtime/budget.go): no notice
				// brought it; it is answered like a tool's.
				ev.Kind, ev.Choice = "user_choice", choiceFromArgs(it.CallID, it.Args)
			case strings.HasPrefix(it.Input, "choice_"):
				ev.Kind = "user_choice"
				if it.Name == runtime.ChoiceMarkerName {
					ev.Choice = choiceFromArgs(it.CallID, it.Args)
				}
			case strings.HasPrefix(it.Input, "oauth_"):
				ev.Kind = "oauth"
			default:
				ev.Kind = "marker"
			}
		case runtime.ItemSummary:
			ev.Kind = "compaction"
		default:
			continue
		}
		out = append(out, ev)
		if ev.Usage != nil {
			out = append(out, StreamEvent{ID: ev.ID + ".usage", ThreadID: thread, Kind: "usage", Seq: ev.Seq, Usage: ev.Usage})
		}
	}
	return out
}

// displayBefore reads the display segment of the result that follows
// items: the marker the engine commits right before it (before the
// injected call, for a synthetic event), naming the original call.
func displayBefore(items []runtime.Item, call string) []rap.Display {
	i := len(items) - 1
	if i >= 0 && items[i].Kind == runtime.ItemToolCall && items[i].Name == runtime.InjectedToolName {
		i--
	}
	if i < 0 {
		return nil
	}
	d := &items[i]
	if d.Kind != runtime.ItemMarker || d.Name != runtime.DisplayMarkerName || d.CallID != call {
		return nil
	}
	var seg rap.Display
	if json.Unmarshal([]byte(d.Args), &seg) != nil {
		return nil
	}
	return []rap.Display{seg}
}

// injectedOrigin reads the original call a synthetic event refers to from
// its injected call among items.
func injectedOrigin(items []runtime.Item, injectedCall string) (orig struct {
	Name string `json:"original_tool_name"`
	ID   string `json:"original_tool_call_id"`
}) {
	for i := len(items) - 1; i >= 0; i-- {
		if it := &items[i]; it.Kind == runtime.ItemToolCall && it.CallID == injectedCall {
			_ = json.Unmarshal([]byte(it.Args), &orig) // the engine wrote it; a bad one leaves the names empty
			break
		}
	}
	return orig
}

// publishingStore is the history store as the engine sees it: after each
// successful commit it publishes the appended items as history events and
// the thread's new status. A failed commit publishes nothing, so live
// history events are exactly the committed ones, in commit order (one
// slice per thread at a time).
type publishingStore struct {
	runtime.HistoryStore
	srv *Server
}

// leasingStore is a publishingStore over a store that lends views.
type leasingStore struct {
	publishingStore
	leaser runtime.LeaseLoader
}

func (p leasingStore) LoadLeased(ctx context.Context, threadID string) (*runtime.Thread, error) {
	return p.leaser.LoadLeased(ctx, threadID)
}

func (p leasingStore) Release(threadID string, lease any) { p.leaser.Release(threadID, lease) }

func newPublishingStore(inner runtime.HistoryStore, srv *Server) runtime.HistoryStore {
	ps := publishingStore{HistoryStore: inner, srv: srv}
	if l, ok := inner.(runtime.LeaseLoader); ok {
		return leasingStore{publishingStore: ps, leaser: l}
	}
	return ps
}

// CommitsWaitForDisk passes the inner store's answer on (local.DiskWaiter).
func (p publishingStore) CommitsWaitForDisk() bool {
	dw, ok := p.HistoryStore.(local.DiskWaiter)
	return ok && dw.CommitsWaitForDisk()
}

func (p publishingStore) Commit(ctx context.Context, c *runtime.Commit) error {
	if err := p.HistoryStore.Commit(ctx, c); err != nil {
		return err
	}
	for i := range c.Append {
		if it := &c.Append[i]; it.Kind == runtime.ItemToolResult && sleepTools[it.Name] {
			p.srv.sleeps.forget(c.ThreadID, it.CallID)
		} else if it.Kind == runtime.ItemMarker && it.Name == runtime.AnswerMarkerName {
			p.srv.answers.Delete(c.ThreadID + "\x00" + it.CallID) // history says it now
		}
	}
	if !p.srv.events.Watched(c.ThreadID) {
		return nil
	}
	for _, ev := range p.srv.historyEvents(c.ThreadID, c.State.Length-len(c.Append), c.Append) {
		p.srv.events.publish(ev)
	}
	st := c.State
	var status, reason string
	th := &runtime.Thread{ID: c.ThreadID, State: st}
	if len(c.Append) == 0 || (st.Pending != nil && !st.Closed && !sleepTools[st.Pending.Name]) {
		// Whether a choice waits is in history, maybe before this commit;
		// with nothing appended, the latest item decides (a failure).
		if loaded, err := p.srv.store.Load(ctx, c.ThreadID); err == nil {
			th = loaded
		}
	}
	if n := len(c.Append); n > 0 {
		status, reason = p.srv.statusOf(th, &c.Append[n-1])
	} else {
		status, reason = p.srv.threadStatus(th)
	}
	p.srv.events.publish(StreamEvent{ID: c.ThreadID + "@v" + strconv.FormatInt(st.Version, 10), ThreadID: c.ThreadID,
		Kind: "state", State: &statusView{Status: status, Reason: reason, Pending: st.Pending,
			Subscriptions: st.Subscriptions, Version: st.Version, Until: p.srv.sleeps.until(c.ThreadID, st.Pending)}})
	return nil
}

// deltaModel streams a completion's text to the thread's watchers as it
// arrives (best effort: a watcher that joins mid-completion gets the rest,
// and the committed turn follows either way), and lets a person stop the
// completion in flight (see Server.stopCompletion).
type deltaModel struct {
	inner runtime.Model
	srv   *Server
}

// errStopped is the permanent model error of a completion a person stopped
// (runtime.ErrStopped: not a failure; the stop message is in history).
var errStopped = runtime.Permanent(stoppedError{})

type stoppedError struct{}

func (stoppedError) Error() string { return "stopped by the user" }

func (stoppedError) Is(target error) bool { return target == runtime.ErrStopped }

func (m deltaModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	inner := m.inner
	if req.Model != "" && req.Model != m.srv.set.model.Name {
		var err error
		if inner, err = m.srv.models.get(ctx, m.srv, req.Model); err != nil {
			return runtime.Permanent(err)
		}
	}
	ctx, done := m.srv.inflight.begin(ctx, req.ThreadID)
	err := inner.Complete(ctx, req, &deltaWriter{TurnWriter: w, srv: m.srv, thread: req.ThreadID, completion: req.ID(), req: req})
	if done() {
		return errStopped
	}
	return err
}

type deltaWriter struct {
	runtime.TurnWriter
	srv        *Server
	thread     string
	completion string
	n          int
	req        *runtime.CompletionRequest
	ahead      bool // the uncommitted items before the completion were published
}

func (d *deltaWriter) Text(s string) {
	d.TurnWriter.Text(s)
	if s == "" || !d.srv.events.Watched(d.thread) {
		d.n++
		return
	}
	if !d.ahead {
		// The items the completion follows (a tool result, the user's
		// message) are committed with the turn, after these deltas: show
		// them first, so the stream keeps history's order.
		d.ahead = true
		items, at := d.req.Uncommitted()
		for _, ev := range d.srv.historyEvents(d.thread, at, items) {
			ev.ahead = true
			d.srv.events.publish(ev)
		}
	}
	d.srv.events.publish(StreamEvent{ID: d.completion + "." + strconv.Itoa(d.n), ThreadID: d.thread, Kind: "delta",
		Text: s, CompletionID: d.completion, Index: d.n})
	d.n++
}

// inflight tracks the completion running in each thread so that a person
// can stop it.
type inflight struct {
	mu      sync.Mutex
	running map[string]*flight
}

type flight struct {
	cancel  context.CancelFunc
	stopped bool
}

// begin registers a completion of thread; done unregisters it and reports
// whether it was stopped.
func (f *inflight) begin(ctx context.Context, thread string) (context.Context, func() bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running == nil {
		f.running = map[string]*flight{}
	}
	cctx, cancel := context.WithCancel(ctx)
	fl := &flight{cancel: cancel}
	f.running[thread] = fl
	return cctx, func() bool {
		cancel()
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.running[thread] == fl {
			delete(f.running, thread)
		}
		return fl.stopped
	}
}

// interrupt cancels the thread's running completion, if any, and reports
// whether there was one.
func (f *inflight) interrupt(thread string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.running[thread]
	if fl == nil {
		return false
	}
	fl.stopped = true
	fl.cancel()
	return true
}
