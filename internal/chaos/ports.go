package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// recordingStore wraps the run's history store and records, for every
// successful commit, the threads it wrote and the children it created. It
// also counts calls, so load tests can report round trips.
type recordingStore struct {
	runtime.HistoryStore

	mu       sync.Mutex
	threads  map[string]bool
	created  map[string]int // child thread -> successful commits that created it
	commits  int
	loads    int
	failures int // commits that returned an error
}

func newRecordingStore(inner runtime.HistoryStore) *recordingStore {
	return &recordingStore{HistoryStore: inner, threads: map[string]bool{}, created: map[string]int{}}
}

func (r *recordingStore) commitCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commits
}

func (r *recordingStore) Load(ctx context.Context, id string) (*runtime.Thread, error) {
	r.mu.Lock()
	r.loads++
	r.mu.Unlock()
	return r.HistoryStore.Load(ctx, id)
}

func (r *recordingStore) Commit(ctx context.Context, c *runtime.Commit) error {
	err := r.HistoryStore.Commit(ctx, c)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failures++
		return err
	}
	r.commits++
	r.threads[c.ThreadID] = true
	for _, ch := range c.Children {
		r.threads[ch.ID] = true
		r.created[ch.ID]++
	}
	return nil
}

// slicedStore returns h (the engine's store, wrapping the backend's
// inner) with the slice loads of inner the engine looks for: a lease and
// the consumed-input check (the memory and disk stores), or the view load
// that answers it (DSQL). So the matrix runs the loads production runs,
// from the latest compaction point with the history before it left out,
// not only full ones.
func slicedStore(h, inner runtime.HistoryStore) runtime.HistoryStore {
	if ll, ok := inner.(runtime.LeaseLoader); ok {
		cc, _ := inner.(runtime.ConsumedChecker)
		return leasedStore{HistoryStore: h, ll: ll, cc: cc}
	}
	if il, ok := inner.(runtime.InputViewLoader); ok {
		return viewStore{HistoryStore: h, il: il}
	}
	return h
}

type leasedStore struct {
	runtime.HistoryStore
	ll runtime.LeaseLoader
	cc runtime.ConsumedChecker // nil: answered from a full load
}

func (s leasedStore) LoadLeased(ctx context.Context, id string) (*runtime.Thread, error) {
	return s.ll.LoadLeased(ctx, id)
}

func (s leasedStore) Release(id string, lease any) { s.ll.Release(id, lease) }

func (s leasedStore) Consumed(ctx context.Context, id string, before int, ids []string) ([]bool, error) {
	if s.cc != nil {
		return s.cc.Consumed(ctx, id, before, ids)
	}
	th, err := s.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	seen := make([]bool, len(ids))
	own := th.Own()
	for _, it := range own[:min(len(own), max(0, before-th.Inherited))] {
		for j, in := range ids {
			seen[j] = seen[j] || (it.Input != "" && it.Input == in)
		}
	}
	return seen, nil
}

type viewStore struct {
	runtime.HistoryStore
	il runtime.InputViewLoader
}

func (s viewStore) LoadViewFor(ctx context.Context, id string, inputs []string) (*runtime.Thread, []bool, error) {
	return s.il.LoadViewFor(ctx, id, inputs)
}

// recordedTimers is the run's runtime.Timers: the real timers (Inner:
// the embedded local.Timers, or the backend's durable ones) armed on the
// run's clock, recording what slices schedule, cancel and what fires. It
// records a problem when the same call is scheduled with a different
// wake-up.
type recordedTimers struct {
	inner runtime.Timers

	mu        sync.Mutex
	order     []string // keys in order of first schedule
	scheduled map[string]runtime.Timer
	calls     int // Schedule calls, repeats included
	cancelled map[string]bool
	fired     map[string]bool // keys whose message the timers delivered (or FireTimers sent late)
	// fresh counts the deliveries of a key not fired before: a timer
	// re-armed after it fired (a durable row whose delete a restart lost)
	// delivers its wake-up again and is not counted.
	fresh int
	// disarmed holds the keys cancelled since they were last scheduled:
	// the timers must not deliver them. Checked only when strict (the
	// driver's runs: on the embedded System a cancel may race a timer
	// that is already firing, as with time.AfterFunc).
	disarmed map[string]bool
	strict   bool
	problems []string
}

func newRecordedTimers() *recordedTimers {
	return &recordedTimers{scheduled: map[string]runtime.Timer{}, cancelled: map[string]bool{}, fired: map[string]bool{},
		disarmed: map[string]bool{}, strict: true}
}

func timerKey(thread, call string) string { return thread + " " + call }

func (m *recordedTimers) Schedule(ctx context.Context, t runtime.Timer) error {
	m.record(t)
	return m.inner.Schedule(ctx, t)
}

func (m *recordedTimers) record(t runtime.Timer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	k := timerKey(t.ThreadID, t.CallID)
	delete(m.disarmed, k)
	if old, ok := m.scheduled[k]; ok {
		// A liveness check arms its successor from the time it runs: a
		// check run again later (redelivered to an engine without a dedup
		// store, which does not see inputs consumed without an item) arms
		// the same check later. The first one is recorded.
		later := t.Message.Kind == runtime.KindCheck && t.At.After(old.At)
		if (!old.At.Equal(t.At) && !later) || old.Message.ID != t.Message.ID || old.Message.Text != t.Message.Text {
			m.problems = append(m.problems, fmt.Sprintf("timer %s scheduled twice with different wake-ups: %s %s, then %s %s",
				k, old.At, old.Message.ID, t.At, t.Message.ID))
		}
		return
	}
	m.order = append(m.order, k)
	m.scheduled[k] = t
}

func (m *recordedTimers) Cancel(ctx context.Context, thread, call string) error {
	m.mu.Lock()
	m.cancelled[timerKey(thread, call)] = true
	m.disarmed[timerKey(thread, call)] = true
	m.mu.Unlock()
	return m.inner.Cancel(ctx, thread, call)
}

// delivered marks fired the timers whose message is msg (the timers'
// queue sees messages, not keys: a check's key is not its message's call).
func (m *recordedTimers) delivered(msg runtime.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.order {
		if m.scheduled[k].Message.ID != msg.ID {
			continue
		}
		if !m.fired[k] {
			m.fresh++
		}
		m.fired[k] = true
		if m.strict && m.disarmed[k] {
			m.problems = append(m.problems, fmt.Sprintf("timer %s delivered %s after it was cancelled", k, msg.ID))
		}
	}
}

// freshCount is how many timers delivered their message for the first
// time.
func (m *recordedTimers) freshCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fresh
}

// late returns the wake-ups cancelled before they fired, in schedule
// order, and marks them fired: FireTimers sends them as wake-ups already
// on their way when the cancel came.
func (m *recordedTimers) late() []runtime.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []runtime.Message
	for _, k := range m.order {
		if m.fired[k] || !m.cancelled[k] {
			continue
		}
		m.fired[k] = true
		out = append(out, m.scheduled[k].Message)
	}
	return out
}

// timerQueue is the queue the run's timers deliver to: the run's, noting
// what fired.
type timerQueue struct{ r *Run }

func (q timerQueue) Send(ctx context.Context, msgs ...runtime.Message) error {
	for _, m := range msgs {
		q.r.timers.delivered(m)
	}
	return q.r.Send(ctx, msgs...)
}

// asyncTool is an asynchronous tool that records each successful dispatch
// and, when reply is set, answers at once through the run's queue, as a RAP
// tool answers through the callback receiver. A retried dispatch answers
// again with the same message ID.
type asyncTool struct {
	run   *Run
	reply bool
}

func (a *asyncTool) Dispatch(ctx context.Context, inv runtime.Invocation) error {
	a.run.recordDispatch(inv)
	if !a.reply {
		return nil
	}
	return a.run.Send(ctx, runtime.Message{V: 1, ID: runtime.ResultID(inv.ThreadID, inv.CallID),
		ThreadID: inv.ThreadID, Kind: runtime.KindToolResult, ToolCallID: inv.CallID, Text: "done: " + inv.Args})
}

// wedgedTool is an asynchronous tool that records its dispatches, never
// answers, and says every call is alive when asked: only its deadline can
// end a call to it (Scenario.Wedged).
type wedgedTool struct{ asyncTool }

func (w wedgedTool) CallStatus(ctx context.Context, thread, call string) (runtime.CallStatus, error) {
	return runtime.StatusAlive, nil
}

// recordedTool wraps a built-in asynchronous tool (the sleeps) to record its
// successful dispatches, keeping its validation and cancellation.
type recordedTool struct {
	inner runtime.Tool
	run   *Run
}

func (r recordedTool) Dispatch(ctx context.Context, inv runtime.Invocation) error {
	if err := r.inner.Dispatch(ctx, inv); err != nil {
		return err
	}
	r.run.recordDispatch(inv)
	return nil
}

func (r recordedTool) ValidateArgs(args string) error {
	if v, ok := r.inner.(runtime.ArgsValidator); ok {
		return v.ValidateArgs(args)
	}
	return nil
}

func (r recordedTool) Cancel(ctx context.Context, thread, call string) error {
	if c, ok := r.inner.(runtime.Canceler); ok {
		return c.Cancel(ctx, thread, call)
	}
	return nil
}

type syncFunc func(ctx context.Context, env *runtime.SyncEnv, inv runtime.Invocation) (runtime.ToolOutput, error)

func (f syncFunc) Run(ctx context.Context, env *runtime.SyncEnv, inv runtime.Invocation) (runtime.ToolOutput, error) {
	return f(ctx, env, inv)
}

// outputs records every published event.
type outputs struct {
	mu  sync.Mutex
	evs []runtime.OutputEvent
}

func (o *outputs) Publish(ctx context.Context, ev runtime.OutputEvent) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evs = append(o.evs, ev)
	return nil
}

// shownModel records what each completion was shown: per thread and turn
// (runtime.CompletionRequest.Turn), the history the model got, rendered
// without IDs (kind, tool name, text) and the tools it was offered. A
// retried completion of the same turn must be shown the same (checked by
// the snapshot in runs that batch like the reference).
type shownModel struct {
	inner runtime.Model

	mu       sync.Mutex
	shown    map[string]string // "thread #turn" -> rendering
	order    []string
	problems []string
}

func newShownModel(inner runtime.Model) *shownModel {
	return &shownModel{inner: inner, shown: map[string]string{}}
}

func (m *shownModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	var b strings.Builder
	for i, it := range req.History {
		if i == req.Inherited && i > 0 {
			b.WriteString("| ")
		}
		fmt.Fprintf(&b, "%s", it.Kind)
		if it.Name != "" {
			b.WriteString(":" + it.Name)
		}
		if it.IsError {
			b.WriteString("!")
		}
		fmt.Fprintf(&b, " %q; ", clip(it.Text))
	}
	names := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		names[i] = t.Name
	}
	fmt.Fprintf(&b, "tools %s", strings.Join(names, ","))
	k := fmt.Sprintf("%s #%d", req.ThreadID, req.Turn())
	got := b.String()
	m.mu.Lock()
	if old, ok := m.shown[k]; !ok {
		m.shown[k] = got
		m.order = append(m.order, k)
	} else if old != got {
		m.problems = append(m.problems, fmt.Sprintf("completion %s was shown two different histories:\n      %s\n    then\n      %s", k, old, got))
	}
	m.mu.Unlock()
	return m.inner.Complete(ctx, req, w)
}

// views returns the renderings, sorted by key, and the problems seen.
func (m *shownModel) views() ([]string, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.shown))
	for k, v := range m.shown {
		out = append(out, k+": "+v)
	}
	slices.Sort(out)
	return out, slices.Clone(m.problems)
}
