package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

// Snapshot is what a run left behind that must not depend on crashes or
// redelivery: every thread's own history and state (but its version, which
// counts commits), and the distinct effects on the outside world.
type Snapshot struct {
	Threads    []ThreadSnapshot `json:"threads"`
	Outputs    []string         `json:"outputs,omitempty"`    // distinct: id kind text
	Dispatches []string         `json:"dispatches,omitempty"` // distinct: thread call name args
	Timers     []string         `json:"timers,omitempty"`     // distinct: thread call at message
	Cancelled  []string         `json:"cancelled,omitempty"`
	Dead       []string         `json:"dead_letters,omitempty"` // distinct: id: reason
	// Shown is what each completion was shown, per thread and turn
	// (shownModel): history without IDs and the tools offered.
	Shown []string `json:"shown,omitempty"`
}

// ThreadSnapshot is one thread's part of a Snapshot.
type ThreadSnapshot struct {
	ID        string              `json:"id"`
	State     runtime.ThreadState `json:"state"`
	Inherited int                 `json:"inherited,omitempty"`
	Items     []runtime.Item      `json:"own_items"`
}

// String renders the snapshot as indented JSON, the form runs are compared
// in.
func (s *Snapshot) String() string {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "snapshot: " + err.Error()
	}
	return string(b)
}

// Snapshot loads every thread the run wrote and collects the outside
// effects. It also returns the invariant violations it sees, and how the
// run falls short of a live end state (see End).
func (r *Run) Snapshot(ctx context.Context) (*Snapshot, []string) {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	s := &Snapshot{}

	r.store.mu.Lock()
	ids := make([]string, 0, len(r.store.threads))
	for id := range r.store.threads {
		ids = append(ids, id)
	}
	for id, n := range r.store.created {
		if n != 1 {
			bad("child thread %s was created by %d commits", id, n)
		}
	}
	r.store.mu.Unlock()
	slices.Sort(ids)

	r.mu.Lock()
	dispatches := slices.Clone(r.dispatches)
	dead := make([]string, 0, len(r.dead))
	for id, reason := range r.dead {
		dead = append(dead, id+": "+reason)
	}
	problems = append(problems, r.problems...)
	r.mu.Unlock()
	slices.Sort(dead)
	s.Dead = dead

	sent := map[string]runtime.Invocation{}
	for _, inv := range dispatches {
		k := inv.ThreadID + " " + inv.CallID
		if old, ok := sent[k]; ok && (old.Name != inv.Name || old.Args != inv.Args) {
			bad("call %s dispatched as %s %s, then as %s %s", k, old.Name, old.Args, inv.Name, inv.Args)
		}
		sent[k] = inv
	}
	for _, inv := range sent {
		s.Dispatches = append(s.Dispatches, inv.ThreadID+" "+inv.CallID+" "+inv.Name+" "+inv.Args)
	}
	slices.Sort(s.Dispatches)

	loaded := map[string]*runtime.Thread{}
	for _, id := range ids {
		th, err := r.store.HistoryStore.Load(ctx, id)
		if err != nil {
			bad("loading thread %s: %v", id, err)
			continue
		}
		loaded[id] = th
		st := th.State.Clone()
		if r.dedup != nil && (len(st.Outbox) > 0 || (st.Pending != nil && !st.Pending.Dispatched)) {
			// The engine records "outbox sent" in the dedup store instead
			// of a second commit; the next slice clears it. Read the state
			// as that slice would.
			seen, err := r.dedup.Seen(ctx, id, []string{runtime.OutboxSentID(st.Version)})
			if err != nil {
				bad("reading the outbox record of %s: %v", id, err)
			} else if seen[0] {
				st.Outbox = nil
				if st.Pending != nil {
					p := *st.Pending
					p.Dispatched = true
					st.Pending = &p
				}
			}
		}
		th.State = st.Clone()
		st.Version = 0
		s.Threads = append(s.Threads, ThreadSnapshot{ID: id, State: st, Inherited: th.Inherited, Items: th.Own()})
		if err := runtimetest.CheckOneResultPerCall(th.Items); err != nil {
			bad("thread %s breaks one result per call: %v", id, err)
		}
		if p := th.State.Pending; p != nil {
			switch {
			case !p.Dispatched:
				bad("thread %s is left waiting on call %s (%s), never dispatched", id, p.ID, p.Name)
			case !hasDispatch(sent, id, p.ID):
				bad("thread %s waits on call %s (%s), marked dispatched but never sent", id, p.ID, p.Name)
			}
		}
		if len(th.State.Outbox) > 0 {
			bad("thread %s ends with %d unsent outbox entries", id, len(th.State.Outbox))
		}
		for _, inv := range sent {
			if inv.ThreadID != id {
				continue
			}
			i := slices.IndexFunc(th.Own(), func(it runtime.Item) bool {
				return it.Kind == runtime.ItemToolCall && it.CallID == inv.CallID
			})
			if i < 0 {
				bad("call %s of thread %s was dispatched but is not in its history", inv.CallID, id)
			} else if it := th.Own()[i]; it.Name != inv.Name || it.Args != inv.Args {
				bad("call %s of thread %s was dispatched as %s %s but history has %s %s", inv.CallID, id, inv.Name, inv.Args, it.Name, it.Args)
			}
		}
	}

	r.out.mu.Lock()
	outs := map[string]runtime.OutputEvent{}
	for _, ev := range r.out.evs {
		// By value: an event carries pointers (Usage), and a resent one is
		// decoded from the store anew.
		if old, ok := outs[ev.ID]; ok && !reflect.DeepEqual(old, ev) {
			bad("output %s published twice with different content: %+v, then %+v", ev.ID, old, ev)
		}
		outs[ev.ID] = ev
	}
	r.out.mu.Unlock()
	for _, ev := range outs {
		s.Outputs = append(s.Outputs, ev.ID+" "+ev.ThreadID+" "+ev.Kind+" "+ev.Text)
	}
	slices.Sort(s.Outputs)

	r.timers.mu.Lock()
	for _, k := range r.timers.order {
		t := r.timers.scheduled[k]
		s.Timers = append(s.Timers, fmt.Sprintf("%s at %s wakes with %s", k, t.At.UTC().Format("2006-01-02T15:04:05Z"), t.Message.ID))
	}
	for k := range r.timers.cancelled {
		s.Cancelled = append(s.Cancelled, k)
	}
	problems = append(problems, r.timers.problems...)
	r.timers.mu.Unlock()
	slices.Sort(s.Timers)
	slices.Sort(s.Cancelled)
	shown, differ := r.model.views()
	s.Shown = shown
	if !r.plan.relaxed() {
		// Relaxed runs batch differently: a retried completion may see
		// more mail than the first attempt did.
		problems = append(problems, differ...)
	}
	problems = append(problems, r.liveness(s, loaded, !r.plan.relaxed())...)
	problems = append(problems, r.meaning(s, loaded)...)
	return s, problems
}

func hasDispatch(sent map[string]runtime.Invocation, thread, call string) bool {
	_, ok := sent[thread+" "+call]
	return ok
}

// Divergence is one way a run differs from its reference or breaks an
// invariant.
type Divergence struct {
	Scenario string
	Run      string // which run: backend, mode and site
	Problems []string
}

func (d Divergence) String() string {
	return d.Scenario + " / " + d.Run + ":\n  " + strings.Join(d.Problems, "\n  ")
}

// Compare returns the problems of a run given the reference snapshot: its
// own invariant violations and, when its snapshot differs, where.
func Compare(ref *Snapshot, got *Snapshot, problems []string) []string {
	if a, b := ref.String(), got.String(); a != b {
		problems = append(problems, "snapshot differs from the crash-free run:\n"+lineDiff(a, b))
	}
	return problems
}

// lineDiff shows the first lines where two renderings differ, with context.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	var b strings.Builder
	from := max(0, i-4)
	for j := from; j < i; j++ {
		fmt.Fprintf(&b, "      %s\n", w[j])
	}
	for j := i; j < min(len(w), i+8); j++ {
		fmt.Fprintf(&b, "    - %s\n", w[j])
	}
	for j := i; j < min(len(g), i+8); j++ {
		fmt.Fprintf(&b, "    + %s\n", g[j])
	}
	return b.String()
}
