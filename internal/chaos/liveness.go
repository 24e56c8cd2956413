package chaos

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentslice/agentslice/internal/runtime"
)

// End is a scenario's expected end state, written down with the scenario:
// what every run of it must reach, whatever its crashes, redeliveries,
// races or batching. It is checked beside the comparison with the
// crash-free run (and beside the golden snapshot of that run, see
// Golden), so a bug that every run shares, the reference included, is
// still caught.
//
// Beyond these counts, every run must end live (see Run.liveness): every
// tool call answered, every asynchronous call dispatched, nothing pending,
// deferred, being compacted or left in an outbox, and no mail left
// undelivered.
type End struct {
	// Threads is how many threads the run ends with (the root included).
	Threads int
	// Closed is how many of them are closed.
	Closed int
	// Subscriptions lists the subscriptions still live at the end, as
	// "thread tool" with thread "main" for the root and "child" for any
	// other; nil means none.
	Subscriptions []string
	// Replies is how many distinct replies the run published (output
	// events of kind "reply").
	Replies int
}

func (e End) String() string {
	return fmt.Sprintf("threads=%d closed=%d subscriptions=%v replies=%d", e.Threads, e.Closed, e.Subscriptions, e.Replies)
}

// endOf measures the End a snapshot shows.
func endOf(s *Snapshot) End {
	var e End
	for _, th := range s.Threads {
		e.Threads++
		if th.State.Closed {
			e.Closed++
		}
		who := "child"
		if th.ID == Root {
			who = Root
		}
		for _, sub := range th.State.Subscriptions {
			e.Subscriptions = append(e.Subscriptions, who+" "+sub.Tool)
		}
	}
	slices.Sort(e.Subscriptions)
	for _, o := range s.Outputs {
		// "id thread kind text"
		if f := strings.SplitN(o, " ", 4); len(f) >= 3 && f[2] == "reply" {
			e.Replies++
		}
	}
	return e
}

// liveness returns how a run's end falls short of a live end state: the
// structural checks every run must pass, then, with exact set, the
// scenario's declared End. A relaxed run (Plan.HoldCrashed,
// Plan.DeadLetterAfter) batches messages differently from the reference,
// and the scripted model answers a batch of two messages with one turn, so
// its counts may legitimately differ: it is held to the structural checks
// only.
func (r *Run) liveness(s *Snapshot, loaded map[string]*runtime.Thread, exact bool) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	tools := r.toolbox(r.timers)
	dispatched := map[string]bool{}
	r.mu.Lock()
	for _, inv := range r.dispatches {
		dispatched[inv.ThreadID+" "+inv.CallID] = true
	}
	r.mu.Unlock()
	// A sleep's dispatch is its timer: a slice killed after scheduling it
	// dispatched the call even though the tool never returned.
	r.timers.mu.Lock()
	for k := range r.timers.scheduled {
		dispatched[k] = true
	}
	r.timers.mu.Unlock()
	for _, ts := range s.Threads {
		th := loaded[ts.ID]
		st := ts.State
		if st.Pending != nil {
			bad("liveness: thread %s ends with call %s (%s) pending", ts.ID, st.Pending.ID, st.Pending.Name)
		}
		if len(st.Deferred) > 0 {
			bad("liveness: thread %s ends with %d deferred messages", ts.ID, len(st.Deferred))
		}
		if st.Compacting != "" {
			bad("liveness: thread %s ends while compacted by %s", ts.ID, st.Compacting)
		}
		if th == nil {
			continue
		}
		answered := map[string]runtime.Item{}
		for _, it := range th.Own() {
			if it.Kind == runtime.ItemToolResult {
				answered[it.CallID] = it
			}
		}
		for _, it := range th.Own() {
			if it.Kind != runtime.ItemToolCall {
				continue
			}
			res, ok := answered[it.CallID]
			if !ok {
				bad("liveness: call %s (%s) of thread %s has no result", it.CallID, it.Name, ts.ID)
				continue
			}
			e, known := tools.Lookup(it.Name)
			if !known || e.Async == nil {
				continue
			}
			// An asynchronous call is closed by its result, an
			// interruption or a refusal ("error: ..."); only a refusal
			// happens without a dispatch.
			if !dispatched[ts.ID+" "+it.CallID] && !(res.IsError && strings.HasPrefix(res.Text, "error:")) {
				bad("liveness: call %s (%s) of thread %s was closed (%q) but never dispatched", it.CallID, it.Name, ts.ID, res.Text)
			}
		}
	}
	for th, box := range r.boxes {
		if len(box) > 0 {
			bad("liveness: thread %s ends with %d undelivered messages", th, len(box))
		}
	}
	if len(r.later) > 0 {
		bad("liveness: %d delayed copies were never delivered", len(r.later))
	}
	if len(r.dlq) > 0 {
		bad("liveness: %d dead-lettered batches were never redriven", len(r.dlq))
	}
	if !exact {
		return problems
	}
	if want, got := r.sc.End, endOf(s); want.String() != got.String() {
		bad("liveness: the run ends with %s, the scenario expects %s", got, want)
	}
	return problems
}
