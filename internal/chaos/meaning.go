package chaos

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentslice/agentslice/internal/runtime"
)

// meaning checks a run's end state by what it means, not by how it is
// spelled: no check here compares an ID's text with an expected one (IDs
// are only followed, as references from one item to another), so a change
// of ID derivation passes and a bug that loses or misroutes work fails,
// whatever the golden snapshot says. It runs on every run, relaxed ones
// included. What it checks, per thread of the snapshot:
//
//   - every message sent to a thread (by a step, a tool, a timer or the
//     runtime itself) entered that thread's history exactly once, or was
//     refused (a dead letter), or was dropped because the thread is closed;
//     liveness checks are consumed without an item;
//   - a tool's result landed on the call it answers: as that call's result
//     or, for a call closed before it came, as a synthetic event naming it;
//   - every sleep ended by its own wake-up or by an interruption, and every
//     wake-up the run scheduled and did not cancel was fired;
//   - every report a child sent (report_to_parent, close_thread with a
//     report) reached the thread that spawned it, once, tied to the call
//     that spawned the child;
//   - a subscription is live at the end exactly when it was started and
//     neither a final event nor cancel_subscription ended it;
//   - the replies a thread published are its model turns that called no
//     tool, each once, with the same text (in DeadLetters runs one may be
//     missing: see runtime's outboxEvidentlySent);
//   - no open thread is stranded: it has run at least once, and its last
//     item is not an input the model was never woken for (a user message,
//     a tool result, a report) but a model turn, or an input that does not
//     wake the model (a marker, a late wake-up), or its model failed for
//     good and said so (an error output);
//   - every call to a tool that never answers (Scenario.Wedged) was closed
//     by the engine with an error (its deadline or a dead status);
//   - the budgets' end state (budgetMeaning): no thread left paused, each
//     pause ended once, each tree's ledger settled and covering what its
//     threads committed.
func (r *Run) meaning(s *Snapshot, loaded map[string]*runtime.Thread) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, "meaning: "+fmt.Sprintf(format, args...))
	}
	r.mu.Lock()
	sent := slices.Clone(r.sentOrder)
	dead := make(map[string]bool, len(r.dead))
	for id := range r.dead {
		dead[id] = true
	}
	r.mu.Unlock()
	byID := map[string]runtime.Message{}
	for _, m := range sent {
		byID[m.ID] = m
	}
	state := map[string]runtime.ThreadState{}
	own := map[string][]runtime.Item{}
	for _, ts := range s.Threads {
		state[ts.ID] = ts.State
		own[ts.ID] = ts.Items
	}

	// Every message entered history once, was refused, or was dropped.
	for _, m := range sent {
		if m.Kind == runtime.KindCheck {
			continue // consumed without an item; deadlines are checked below
		}
		if m.Kind == runtime.KindReport && m.Final && m.Text == "" {
			// A child's close notice: consumed without an item; the
			// parent no longer counts the child alive.
			// (A parent that closed first refuses it, as any message.)
			if st := state[m.ThreadID]; !st.Closed && slices.Contains(st.Open, m.From) {
				bad("thread %s still counts its child %s alive after the child's close notice %s", m.ThreadID, m.From, m.ID)
			}
			continue
		}
		var hits []runtime.Item
		for _, it := range own[m.ThreadID] {
			if it.Input == m.ID {
				hits = append(hits, it)
			}
		}
		st, known := state[m.ThreadID]
		switch {
		case len(hits) > 1:
			bad("message %s (%s) entered the history of thread %s %d times", m.ID, m.Kind, m.ThreadID, len(hits))
		case len(hits) == 0 && isBudgetWake(m):
			// A thread that was not waiting consumes a tree's wake-up
			// without an item; budgetMeaning checks nobody stays paused.
		case len(hits) == 0 && !dead[m.ID] && !(known && st.Closed):
			bad("message %s (%s, %q) to thread %s was lost: it is not in the thread's history, not refused, and the thread is open",
				m.ID, m.Kind, clip(m.Text), m.ThreadID)
		case len(hits) == 1 && (m.Kind == runtime.KindToolResult || m.Kind == runtime.KindWake):
			if it := hits[0]; it.CallID != m.ToolCallID && originalCall(own[m.ThreadID], it.CallID) != m.ToolCallID {
				bad("the %s for call %s of thread %s landed on call %s instead", m.Kind, m.ToolCallID, m.ThreadID, it.CallID)
			}
		}
	}

	r.budgetMeaning(s, bad)

	// Every scheduled wake-up that was not cancelled was fired.
	r.timers.mu.Lock()
	for _, k := range r.timers.order {
		if !r.timers.fired[k] && !r.timers.cancelled[k] {
			bad("wake-up %s (%s) was scheduled and never fired", r.timers.scheduled[k].Message.ID, k)
		}
	}
	r.timers.mu.Unlock()

	for _, ts := range s.Threads {
		items := own[ts.ID]
		results := map[string]runtime.Item{}
		for _, it := range items {
			if it.Kind == runtime.ItemToolResult {
				results[it.CallID] = it
			}
		}
		for _, it := range items {
			if it.Kind != runtime.ItemToolCall {
				continue
			}
			res, ok := results[it.CallID]
			if !ok {
				continue // liveness reports a call without a result
			}
			switch {
			case isSleep(it.Name) && !res.IsError:
				if w, ok := byID[res.Input]; !ok || w.Kind != runtime.KindWake || w.ToolCallID != it.CallID {
					bad("sleep %s of thread %s ended with %q, neither its wake-up nor an interruption", it.CallID, ts.ID, clip(res.Text))
				}
			case r.sc.Wedged != "" && it.Name == r.sc.Wedged:
				if !res.IsError || res.Input != "" {
					bad("call %s of thread %s to %s, which never answers, ended with %q instead of an error from the engine (its deadline)",
						it.CallID, ts.ID, it.Name, clip(res.Text))
				}
			}
		}

		// Reports reach the thread that spawned their sender.
		if p := ts.State.Parent; p != "" {
			for _, rep := range reportsOf(items, results) {
				want := "Report from child thread " + ts.ID + ": " + rep
				n := 0
				for i, it := range own[p] {
					if it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName && it.Text == want {
						n++
						if orig := originalCall(own[p][:i], it.CallID); orig != ts.State.SpawnCall {
							bad("the report %q of thread %s reached thread %s tied to call %s, not to %s, the call that spawned it",
								clip(rep), ts.ID, p, orig, ts.State.SpawnCall)
						}
					}
				}
				if n != 1 && !(n == 0 && state[p].Closed) {
					bad("the report %q of thread %s reached its parent %s %d times, want once", clip(rep), ts.ID, p, n)
				}
			}
		}

		// Subscriptions live exactly when started and not ended.
		want := map[string]bool{}
		for _, it := range items {
			if it.Kind != runtime.ItemToolResult {
				continue
			}
			if m, ok := byID[it.Input]; ok && m.Subscription && m.Kind == runtime.KindToolResult && it.CallID == m.ToolCallID {
				want[m.ToolCallID] = true
			}
		}
		for _, m := range sent {
			if m.ThreadID == ts.ID && m.Kind == runtime.KindEvent && m.Final && !dead[m.ID] {
				delete(want, m.ToolCallID)
			}
		}
		for _, it := range items {
			if it.Kind == runtime.ItemToolCall && it.Name == "cancel_subscription" {
				if res, ok := results[it.CallID]; ok && !res.IsError {
					delete(want, argString(it.Args, "tool_call_id"))
				}
			}
		}
		live := map[string]bool{}
		for _, sub := range ts.State.Subscriptions {
			live[sub.CallID] = true
			if !want[sub.CallID] {
				bad("thread %s ends subscribed to %s (%s), which a final event or a cancel ended, or which never started", ts.ID, sub.CallID, sub.Tool)
			}
		}
		for id := range want {
			if !live[id] {
				bad("thread %s lost its subscription %s, which nothing ended", ts.ID, id)
			}
		}

		// Replies are the model's turns that called no tool (a compaction
		// thread's summary is delivered to its parent instead).
		var said []string
		for i, it := range items {
			if it.Kind != runtime.ItemAssistant || ts.State.Compaction {
				continue
			}
			if i+1 < len(items) && items[i+1].Kind == runtime.ItemToolCall && items[i+1].Name != runtime.InjectedToolName {
				continue // the text of a turn that called a tool
			}
			said = append(said, it.Text)
		}
		var published []string
		modelFailed := false
		for _, o := range s.Outputs {
			// "id thread kind text"
			if f := strings.SplitN(o, " ", 4); len(f) == 4 && f[1] == ts.ID {
				switch {
				case f[2] == "reply":
					published = append(published, f[3])
				case f[2] == "error" && strings.HasPrefix(f[3], "the model failed"):
					modelFailed = true
				}
			}
		}
		slices.Sort(said)
		slices.Sort(published)
		switch {
		case r.plan.DeadLetterAfter > 0:
			// A first delivery after a dead-lettered batch is trusted to
			// mean its replies were published (runtime's
			// outboxEvidentlySent): one may be missing, none may be extra.
			if !subset(published, said) {
				bad("thread %s published the replies %q, more than its history says (%q)", ts.ID, published, said)
			}
		case !slices.Equal(said, published):
			bad("thread %s published the replies %q, but its history says %q", ts.ID, published, said)
		}

		// No open thread is stranded. A thread whose model was woken and
		// failed for good told its person so (an error output) and waits
		// for them: a relaxed run's batching can outrun a scripted model.
		if ts.State.Closed || modelFailed {
			continue
		}
		if len(items) == 0 {
			bad("thread %s was created and never ran", ts.ID)
			continue
		}
		last := items[len(items)-1]
		switch last.Kind {
		case runtime.ItemUser:
			bad("thread %s is stranded: its last item is a message (%q) the model never answered", ts.ID, clip(last.Text))
		case runtime.ItemToolResult:
			if m, ok := byID[last.Input]; ok && m.Kind == runtime.KindWake {
				break // a late wake-up does not wake the model
			}
			bad("thread %s is stranded: its last item is the result of %s (%q), and the model never ran after it", ts.ID, last.Name, clip(last.Text))
		}
	}
	return problems
}

// originalCall returns the call a synthetic event's call (callID, a
// receive_event__injected call in items) names, or "".
func originalCall(items []runtime.Item, callID string) string {
	for i := len(items) - 1; i >= 0; i-- {
		if it := items[i]; it.Kind == runtime.ItemToolCall && it.CallID == callID && it.Name == runtime.InjectedToolName {
			return argString(it.Args, "original_tool_call_id")
		}
	}
	return ""
}

// reportsOf returns the reports a thread's items sent to its parent: the
// accepted report_to_parent calls and close_thread calls with a report.
func reportsOf(items []runtime.Item, results map[string]runtime.Item) []string {
	var out []string
	for _, it := range items {
		if it.Kind != runtime.ItemToolCall {
			continue
		}
		var rep string
		switch it.Name {
		case "report_to_parent":
			rep = argString(it.Args, "report")
		case "close_thread":
			rep = argString(it.Args, "report_to_parent")
		}
		if res, ok := results[it.CallID]; rep != "" && ok && !res.IsError {
			out = append(out, rep)
		}
	}
	return out
}

func argString(args, field string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[field], &s) != nil {
		return ""
	}
	return s
}

// subset reports whether the sorted multiset a is contained in the sorted
// multiset b.
func subset(a, b []string) bool {
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j == len(b) || b[j] != x {
			return false
		}
		j++
	}
	return true
}

func isSleep(name string) bool {
	return name == "sleep" || name == "sleep_until" || name == "sleep_until_event_or_input"
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
