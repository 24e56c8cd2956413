package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// fold applies one new message to the working state. It reports whether the
// model should run because of it.
func (s *slice) fold(ctx context.Context, m Message) (wake bool) {
	if s.st.Closed {
		s.res.Dropped = append(s.res.Dropped, m.ID)
		s.inputs = append(s.inputs, m.ID)
		s.observe(ctx, Event{Type: EventMessageDropped, ThreadID: s.threadID,
			MessageIDs: []string{m.ID}, Reason: "thread is closed"})
		return false
	}
	switch m.Kind {
	case KindUser, KindParent, KindStart:
		if m.Agent != "" && !s.acceptAgent(ctx, m) {
			return false
		}
		if m.Budget != nil {
			if err := s.changeBudget(ctx, m.ID, *m.Budget); err != nil {
				s.budgetRefused(ctx, m, err)
				return false
			}
		}
		if m.Upgrade != "" && s.version == 0 && s.st.Upgrade == "" && m.Upgrade != UpgradeLatest {
			s.st.Upgrade = m.Upgrade // fixed with the thread's first items
		}
		s.interrupt(m)
		if m.Kind == KindStart && m.ToolCallID != "" {
			// A temporary child processing one subscription event: the
			// event first, then its instructions.
			if s.findCall(m.ToolCallID) == nil {
				s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "tool_call_id",
					Reason: fmt.Sprintf("no call %q in the view of thread %s", m.ToolCallID, s.threadID)})
				return false
			}
			ev := m
			ev.ID, ev.Text = m.ID+"#event", m.From
			s.foldEvent(ev)
			s.appendItem(Item{Kind: ItemUser, Input: m.ID, Text: threadedEventInstructions(s.threadID)})
			return true
		}
		text := m.Text
		if m.Kind == KindParent {
			text = "Message from the parent thread: " + m.Text
		}
		s.appendItem(Item{Kind: ItemUser, Input: m.ID, Text: text})
		return true
	case KindContinue:
		s.appendItem(Item{Kind: ItemMarker, Input: m.ID, Text: "continue"})
		return true
	case KindAgent:
		// A person switches the thread's agent: recorded in history; the
		// next completion binds the new definition's version (applyAgent).
		if s.e.Agents == nil {
			s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "agent", Reason: "this deployment defines no agents"})
			return false
		}
		if _, ok := s.e.Agents.Agent(m.Agent); !ok {
			s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "agent", Reason: fmt.Sprintf("unknown agent %q", m.Agent)})
			return false
		}
		if m.Text != "" {
			return s.upgradeAgent(ctx, m)
		}
		prev := s.st.Agent
		s.st.Agent, s.st.AgentHash = m.Agent, ""
		s.agent, s.toolset = agentState{}, nil // resolved again for the agent now bound
		s.appendItem(Item{Kind: ItemMarker, Input: m.ID, Text: fmt.Sprintf("agent switched to %s (was %q)", m.Agent, prev)})
		return false
	case KindModel:
		s.st.Model = m.Text
		name := m.Text
		if name == "" {
			name = "the default model"
		}
		s.appendItem(Item{Kind: ItemMarker, Input: m.ID, Text: "model switched to " + name})
		return false
	case KindStop, KindClose:
		// A person steps in: the pending call (a tool, a sleep) gets its
		// one "interrupted" result and the model is not woken for it.
		s.interrupt(m)
		s.st.ModelWait = nil // a provider wait ends too: its retry does nothing
		if s.budgetWait() != nil {
			s.budgetState().Wait = nil // and a budget wait: its choice is no longer asked
		}
		text := "stopped by the user"
		if m.Text != "" {
			text += ": " + m.Text
		}
		if n := s.endSubscriptions(); n > 0 {
			text += fmt.Sprintf(" (active subscriptions cancelled: %d)", n)
		}
		if m.Kind == KindClose {
			text = strings.Replace(text, "stopped", "closed", 1)
			s.st.Closed = true
			s.st.Open = nil      // a closed thread spawns no more: its count is done
			s.st.Compacting = "" // and waits for no summary (dropped when it arrives)
			if n := closeNotice(s.threadID, &s.st); n != nil {
				s.addOutbox(OutboxEntry{Message: n})
			}
		}
		s.appendItem(Item{Kind: ItemMarker, Input: m.ID, Text: text})
		return false
	case KindSummary:
		if s.st.Compacting != m.From || m.From == "" {
			s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "from",
				Reason: fmt.Sprintf("summary from %q, but thread %s is compacted by %q", m.From, s.threadID, s.st.Compacting)})
			return false
		}
		it, start := s.summaryItem(m)
		s.appendItem(it)
		s.st.ViewStart = start
		s.st.Compacting = ""
		s.st.Tokens = 0 // unknown until the next completion sees the compacted view
		return false
	case KindToolResult, KindWake:
		return s.foldResult(ctx, m)
	case KindCheck:
		return s.foldCheck(ctx, m)
	case KindRetry:
		return s.foldRetry(m)
	case KindNotice:
		if s.st.Pending == nil || s.st.Pending.ID != m.ToolCallID {
			s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "tool_call_id",
				Reason: fmt.Sprintf("no pending call %q on thread %s", m.ToolCallID, s.threadID)})
			return false
		}
		it := Item{Kind: ItemMarker, Input: m.ID, CallID: m.ToolCallID, Text: m.Text}
		if m.Choice != "" {
			it.Name, it.Args = ChoiceMarkerName, m.Choice
		}
		s.appendItem(it)
		s.addOutbox(OutboxEntry{Output: &OutputEvent{
			ID: DeriveID("out_", s.threadID, m.ID), ThreadID: s.threadID, Kind: "notice", Text: m.Text}})
		return false
	case KindBudget:
		wake, err := s.foldBudget(ctx, m)
		if err != nil {
			s.budgetRefused(ctx, m, err)
			return false
		}
		return wake
	case KindAnswer:
		if w := s.budgetWait(); w != nil && m.ToolCallID == w.Call {
			wake, err := s.foldBudgetAnswer(ctx, m, w)
			if err != nil {
				s.budgetRefused(ctx, m, err)
				return false
			}
			return wake
		}
		// A person answered a call's user_choice (the server gave the tool
		// the answer first, so the call's result may be in already).
		if s.findCall(m.ToolCallID) == nil {
			s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "tool_call_id",
				Reason: fmt.Sprintf("no call %q on thread %s for this answer", m.ToolCallID, s.threadID)})
			return false
		}
		s.appendItem(Item{Kind: ItemMarker, Input: m.ID, CallID: m.ToolCallID, Name: AnswerMarkerName, Args: m.Choice, Text: m.Text})
		return false
	case KindView:
		s.foldView(m)
		return false
	case KindEvent:
		if !s.subscribed(m.ToolCallID) {
			s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "tool_call_id",
				Reason: fmt.Sprintf("no active subscription %q on thread %s (unknown, cancelled or ended)", m.ToolCallID, s.threadID)})
			return false
		}
		if m.Final && (m.Associative || !mutateKeepsThreadedSubscription()) {
			s.dropSubscription(m.ToolCallID)
		}
		if !m.Associative {
			s.threaded(m)
			return false
		}
		return s.foldOrDefer(ctx, m)
	case KindReport:
		if isCloseNotice(&m) {
			// A child closed: it is no longer alive. Nothing enters history
			// (the notice is idempotent, so a redelivery needs no record).
			if i := slices.Index(s.st.Open, m.From); i >= 0 {
				s.st.Open = slices.Delete(slices.Clone(s.st.Open), i, i+1)
				s.changed()
			}
			return false
		}
		if s.findCall(m.ToolCallID) == nil {
			s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "tool_call_id",
				Reason: fmt.Sprintf("no call %q on thread %s for this report", m.ToolCallID, s.threadID)})
			return false
		}
		return s.foldOrDefer(ctx, m)
	}
	s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "kind", Reason: fmt.Sprintf("unhandled kind %q", m.Kind)})
	return false
}

// foldOrDefer injects an event now, or keeps it until the pending call has
// its result (a sleep is interrupted by it instead).
func (s *slice) foldOrDefer(ctx context.Context, m Message) bool {
	if p := s.st.Pending; p != nil {
		// A toolset that cannot be loaded now counts as not interruptible:
		// the event waits, which loses nothing.
		if e, ok, _ := s.lookup(ctx, p.Name); ok && e.Interruptible {
			s.interrupt(m)
		} else {
			s.deferMessage(m)
			return false
		}
	}
	s.foldEvent(m)
	return true
}

// deferMessage keeps m in the state until the pending call has its result;
// it counts as consumed now.
func (s *slice) deferMessage(m Message) {
	s.st.Deferred = append(s.st.Deferred, m)
	s.changed()
	s.inputs = append(s.inputs, m.ID)
	s.res.Processed = append(s.res.Processed, m.ID)
}

func (s *slice) subscribed(callID string) bool {
	for _, sub := range s.st.Subscriptions {
		if sub.CallID == callID {
			return true
		}
	}
	return false
}

// threaded hands a subscription event to a temporary child thread that
// inherits this thread's history, processes the event and reports or closes.
// This thread records only that the event was consumed (a marker the model
// never sees) unless a report comes back.
func (s *slice) threaded(m Message) {
	child := DeriveID("thr_", s.threadID, m.ID)
	s.appendItem(Item{Kind: ItemMarker, Input: m.ID, CallID: m.ToolCallID, Text: "event handed to thread " + child})
	stack := append(append([]string(nil), s.st.Stack...), child)
	st := ThreadState{Parent: s.threadID, Stack: stack, SpawnCall: m.ToolCallID, Temporary: true,
		Agent: s.st.Agent, AgentHash: s.st.AgentHash, Upgrade: s.st.Upgrade, ParentClass: s.st.Class.OrDefault(),
		Incarnation: childIncarnation(s.st.Incarnation, child)}
	st.Class = childClass(st.ParentClass, st)
	s.children = append(s.children, ChildThread{ID: child, SpawnAt: s.th.Base + len(s.view) - 1, State: st})
	start := Message{V: MessageVersion, ID: DeriveID("start_", child), ThreadID: child, Kind: KindStart,
		ToolCallID: m.ToolCallID, From: m.Text, Content: m.Content, Final: m.Final, Class: st.Class}
	s.addOutbox(OutboxEntry{Message: &start})
}

func threadedEventInstructions(self string) string {
	return "You are a temporary thread (" + self + ") created to handle the event above. Decide what it means for the task. " +
		"If the parent thread needs to know, call close_thread with thread_id \"" + self + "\" and a report_to_parent; " +
		"otherwise call close_thread without a report."
}

// interrupt closes the pending call, if any, because the user (or parent)
// spoke: every tool call gets exactly one result. The tool is told to cancel
// (best effort) and a late real result becomes a synthetic event.
func (s *slice) interrupt(m Message) {
	p := s.st.Pending
	if p == nil {
		return
	}
	s.addOutbox(OutboxEntry{Cancel: &PendingCall{ID: p.ID, Name: p.Name}})
	cause := "a new message"
	switch m.Kind {
	case KindEvent, KindReport:
		cause = "an event"
	case KindStop, KindClose:
		cause = "the user's stop"
	}
	s.closePending(Item{Kind: ItemToolResult, CallID: p.ID, Name: p.Name, IsError: true,
		Text: fmt.Sprintf("interrupted: %s arrived before %s returned; a late result will be delivered as an event", cause, p.Name)})
}

func (s *slice) foldResult(ctx context.Context, m Message) bool {
	if p := s.st.Pending; p != nil && p.ID == m.ToolCallID {
		text, isError := m.Text, m.IsError
		if m.Kind == KindWake && text == "" {
			text = "woke up"
		}
		if m.Subscription {
			if n := s.lim.MaxSubscriptions; n > 0 && len(s.st.Subscriptions) >= n {
				s.addOutbox(OutboxEntry{Cancel: &PendingCall{ID: p.ID, Name: p.Name}})
				text += fmt.Sprintf("\n\nerror: this thread already has %d active subscriptions, its limit: this one was not kept and %s was asked to stop it; "+
					"cancel one with cancel_subscription before starting another", n, p.Name)
				isError = true
			} else {
				s.st.Subscriptions = append(s.st.Subscriptions, Subscription{CallID: p.ID, Tool: p.Name, Args: p.Args, Trace: p.Trace})
			}
		}
		res := Item{Kind: ItemToolResult, Input: m.ID, At: m.At, CallID: p.ID, Name: p.Name,
			Text: text, Content: m.Content, IsError: isError}
		if m.Display != "" {
			s.appendItem(displayMarker(p.ID, m.Display, m.At))
		}
		if c := s.findCall(p.ID); c != nil && c.At != 0 && m.At >= c.At {
			s.res.Tool, s.res.ToolLatency = p.Name, time.Duration(m.At-c.At)*time.Millisecond
		}
		s.closePending(res)
		return true
	}
	call := s.findCall(m.ToolCallID)
	if call == nil {
		s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "tool_call_id",
			Reason: fmt.Sprintf("no tool call %q on thread %s", m.ToolCallID, s.threadID)})
		return false
	}
	// A late result: the call was already closed (interrupted).
	if s.st.Pending != nil {
		s.deferMessage(m)
		return false
	}
	if s.mutateLosesLateResult(m) {
		return false
	}
	s.foldEvent(m)
	// A late wake-up is recorded but does not make the model speak.
	return m.Kind != KindWake
}

// foldEvent injects m as a synthetic event: an assistant call to
// receive_event__injected naming the original call, then its result.
func (s *slice) foldEvent(m Message) {
	orig := s.findCall(m.ToolCallID)
	name, args := "", "{}"
	if orig != nil {
		name, args = orig.Name, orig.Args
	}
	if args == "" {
		args = "{}"
	}
	a, _ := json.Marshal(struct {
		Name string          `json:"original_tool_name"`
		ID   string          `json:"original_tool_call_id"`
		Args json.RawMessage `json:"original_args"`
	}{name, m.ToolCallID, json.RawMessage(args)})
	id := DeriveID(SyntheticCallPrefix, s.threadID, m.ID)
	text := m.Text
	switch {
	case m.Kind == KindWake && text == "":
		text = "late wake-up: the sleep had already been interrupted"
	case m.Kind == KindReport:
		text = "Report from child thread " + m.From + ": " + m.Text
	}
	if m.Display != "" {
		s.appendItem(displayMarker(m.ToolCallID, m.Display, m.At))
	}
	s.appendItem(Item{Kind: ItemToolCall, CallID: id, Name: InjectedToolName, Args: string(a)})
	s.appendItem(Item{Kind: ItemToolResult, Input: m.ID, At: m.At, CallID: id, Name: InjectedToolName,
		Text: text, Content: m.Content, IsError: m.IsError})
}

// endSubscriptions cancels every active subscription (a person stopped
// the thread: its background work, a running command say, ends too) and
// returns how many there were. Each tool is told (cancel_tool_call); an
// event that still arrives is refused as for a cancelled subscription.
func (s *slice) endSubscriptions() int {
	n := len(s.st.Subscriptions)
	for _, sub := range s.st.Subscriptions {
		s.addOutbox(OutboxEntry{Cancel: &PendingCall{ID: sub.CallID, Name: sub.Tool}})
	}
	if n > 0 {
		s.st.Subscriptions = nil
		s.changed()
	}
	return n
}

func (s *slice) dropSubscription(callID string) {
	for i, sub := range s.st.Subscriptions {
		if sub.CallID == callID {
			s.st.Subscriptions = append(s.st.Subscriptions[:i:i], s.st.Subscriptions[i+1:]...)
			s.changed()
			return
		}
	}
}

// findCall returns the tool call item with the given ID in the thread's
// view, or nil. A call before the loaded part of the view (a child spawned
// before the latest compaction reporting, a late result of a call long
// closed) is looked up in the whole view, loaded once for the slice; a
// failure to load it is a transient error of the slice (foldErr).
func (s *slice) findCall(id string) *Item {
	if it := callIn(s.view, id); it != nil || s.th.Base == 0 {
		return it
	}
	if it := summaryCallIn(s.view, id); it != nil {
		return it
	}
	if s.full == nil {
		th, err := s.e.History.Load(s.ctx, s.threadID)
		if err != nil {
			if s.foldErr == nil {
				s.foldErr = fmt.Errorf("runtime: loading the whole history of thread %s: %w", s.threadID, err)
			}
			return nil
		}
		s.full = th.Items
	}
	return callIn(s.full, id)
}

func callIn(view []Item, id string) *Item {
	for i := len(view) - 1; i >= 0; i-- {
		if it := &view[i]; it.Kind == ItemToolCall && it.CallID == id {
			return it
		}
	}
	return nil
}

// jsonObject reports whether s is one valid JSON object. gjson's validator
// accepts what encoding/json.Valid accepts (FuzzJSONObjectAgreesWithStd)
// at a third of the cost: it runs for every tool call a model makes.
func jsonObject(s string) bool {
	t := strings.TrimLeft(s, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && gjson.Valid(s)
}
