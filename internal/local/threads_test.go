package local

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// manualTimers records what the engine schedules; tests fire wake-ups by
// hand (the in-process timers have their own test).
type manualTimers struct {
	mu        sync.Mutex
	scheduled []runtime.Timer
	cancelled []string
}

func (m *manualTimers) Schedule(ctx context.Context, t runtime.Timer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scheduled = append(m.scheduled, t)
	return nil
}

func (m *manualTimers) Cancel(ctx context.Context, thread, call string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cancelled = append(m.cancelled, thread+" "+call)
	return nil
}

// scenario is a harness with the built-in thread and sleep tools, a "watch"
// tool that starts subscriptions, a fixed clock, and a record of every
// message sent, for redelivery.
type scenario struct {
	*harness
	timers *manualTimers
	mu     sync.Mutex
	sent   []runtime.Message
}

var scenarioClock = time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)

func newScenario(t *testing.T, m runtime.Model, mods ...func(*Config)) *scenario {
	sc := &scenario{timers: &manualTimers{}}
	mods = append(mods, func(c *Config) {
		c.OnSend = func(msgs []runtime.Message) {
			sc.mu.Lock()
			defer sc.mu.Unlock()
			sc.sent = append(sc.sent, msgs...)
		}
	})
	sc.harness = newHarness(t, m, mods...)
	for _, e := range runtime.ThreadTools() {
		sc.tb.MustAdd(e)
	}
	for _, e := range runtime.SleepTools(sc.timers, func() time.Time { return scenarioClock }) {
		sc.tb.MustAdd(e)
	}
	return sc
}

// fire delivers the i-th scheduled wake-up.
func (sc *scenario) fire(i int) {
	sc.timers.mu.Lock()
	msg := sc.timers.scheduled[i].Message
	sc.timers.mu.Unlock()
	sc.send(msg)
	sc.wait()
}

type goldenThread struct {
	ID            string         `json:"id"`
	Parent        string         `json:"parent,omitempty"`
	Closed        bool           `json:"closed,omitempty"`
	Temporary     bool           `json:"temporary,omitempty"`
	Pending       string         `json:"pending,omitempty"`
	Subscriptions []string       `json:"subscriptions,omitempty"`
	Inherited     int            `json:"inherited,omitempty"`
	Items         []runtime.Item `json:"own_items"`
}

type goldenFile struct {
	Threads     []goldenThread `json:"threads"`
	Timers      []string       `json:"timers,omitempty"`
	Cancelled   []string       `json:"cancelled_timers,omitempty"`
	DeadLetters []string       `json:"dead_letters,omitempty"`
}

func (sc *scenario) render(withDead bool) string {
	var g goldenFile
	for _, id := range sc.store.Threads() {
		th, err := sc.store.Load(context.Background(), id)
		if err != nil {
			sc.t.Fatal(err)
		}
		sc.history(id) // checks one result per call
		gt := goldenThread{ID: id, Parent: th.State.Parent, Closed: th.State.Closed, Temporary: th.State.Temporary,
			Inherited: th.Inherited, Items: th.Own()}
		if th.State.Pending != nil {
			gt.Pending = th.State.Pending.Name + " " + th.State.Pending.ID
		}
		for _, s := range th.State.Subscriptions {
			gt.Subscriptions = append(gt.Subscriptions, s.Tool+" "+s.CallID)
		}
		g.Threads = append(g.Threads, gt)
	}
	sc.timers.mu.Lock()
	for _, t := range sc.timers.scheduled {
		g.Timers = append(g.Timers, fmt.Sprintf("%s %s at %s", t.ThreadID, t.CallID, t.At.UTC().Format(time.RFC3339)))
	}
	g.Cancelled = append(g.Cancelled, sc.timers.cancelled...)
	sc.timers.mu.Unlock()
	if withDead {
		dead, _ := sc.sys.DeadLetters()
		for _, d := range dead {
			g.DeadLetters = append(g.DeadLetters, d.Message.ID+": "+d.Reason)
		}
	}
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		sc.t.Fatal(err)
	}
	return string(b) + "\n"
}

// check compares the system with the golden file, then redelivers every
// message the scenario sent, twice (in order, then in reverse), and checks
// that nothing changed.
func (sc *scenario) check(name string) {
	sc.t.Helper()
	sc.wait()
	got := sc.render(true)
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			sc.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			sc.t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		sc.t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		sc.t.Fatalf("%s differs from the golden file\n--- got\n%s", path, got)
	}
	before := sc.render(false)
	sc.mu.Lock()
	sent := slices.Clone(sc.sent)
	sc.mu.Unlock()
	for pass := range 2 {
		order := slices.Clone(sent)
		if pass == 1 {
			slices.Reverse(order)
		}
		for _, m := range order {
			sc.send(m)
		}
		sc.wait()
	}
	if after := sc.render(false); after != before {
		sc.t.Fatalf("redelivering every message twice changed the histories\n--- after\n%s\n--- before\n%s", after, before)
	}
}

func call(name, args string) *model.StepCall {
	return &model.StepCall{Name: name, Args: json.RawMessage(args)}
}

// gated holds completions of threads started with a given text until the
// test opens the gate.
type gated struct {
	runtime.Model
	key  string
	gate chan struct{}
}

func (g *gated) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	for _, it := range req.History[req.Inherited:] {
		if it.Kind == runtime.ItemUser && strings.Contains(it.Text, g.key) {
			select {
			case <-g.gate:
			case <-time.After(10 * time.Second):
				return runtime.Permanent(fmt.Errorf("gate %q never opened", g.key))
			}
			break
		}
	}
	return g.Model.Complete(ctx, req, w)
}

func TestSpawnParallelChildrenAndReports(t *testing.T) {
	script := &model.Script{
		Threads: map[string][]model.Step{"main": {
			{Text: "Splitting the work.", ToolCall: call("spawn_thread", `{"instructions":"alpha task: check the parser","child_of":["main"]}`)},
			{ToolCall: call("spawn_thread", `{"instructions":"beta task: check the storage","child_of":["main"]}`)},
			{Text: "Both children are working."},
			{Text: "Alpha reported."},
			{Text: "Beta reported; all done."},
		}},
		Match: []model.MatchRule{
			{Contains: "alpha task", Steps: []model.Step{
				{ToolCall: call("report_to_parent", `{"report":"parser is fine"}`)},
				{ToolCall: call("close_thread", `{"thread_id":"$THREAD"}`)},
			}},
			{Contains: "beta task", Steps: []model.Step{
				{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"storage has 2 failing tests"}`)},
			}},
		},
	}
	g := &gated{Model: model.NewScripted(script), key: "beta task", gate: make(chan struct{})}
	sc := newScenario(t, g)
	sc.send(user("main", "u1", "check everything"))
	sc.waitReplies(2) // "Both children are working." and "Alpha reported."
	close(sc.gate())
	sc.waitReplies(3)
	sc.check("spawn_parallel_reports")
}

func (sc *scenario) gate() chan struct{} {
	return sc.sys.cfg.Model.(*gated).gate
}

func TestSpawnRejectsForeignChildOf(t *testing.T) {
	script := &model.Script{Default: []model.Step{
		{ToolCall: call("spawn_thread", `{"instructions":"do it","child_of":["other-root"]}`)},
		{Text: "I will do it myself."},
	}}
	sc := newScenario(t, model.NewScripted(script))
	sc.send(user("main", "u1", "go"))
	sc.check("spawn_child_of_rejected")
}

func TestCloseThenLateMessage(t *testing.T) {
	script := &model.Script{
		Threads: map[string][]model.Step{"main": {
			{ToolCall: call("spawn_thread", `{"instructions":"gamma task","child_of":["main"]}`)},
			{Text: "Spawned."},
			{Text: "Gamma said goodbye."},
		}},
		Match: []model.MatchRule{{Contains: "gamma task", Steps: []model.Step{
			{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"bye"}`)},
		}}},
	}
	sc := newScenario(t, model.NewScripted(script))
	sc.send(user("main", "u1", "go"))
	sc.waitReplies(2)
	sc.wait()
	th, _ := sc.store.Load(context.Background(), "main")
	child := th.State.Children[0]
	sc.send(user(child, "late-1", "are you still there?"))
	sc.check("close_then_late_message")
	if got := kinds(sc.history(child)[1:]); strings.Contains(got, "user,user") {
		t.Fatalf("closed thread took a message: %s", got)
	}
}

// subscribe starts a subscription on "main" through the watch tool: the
// model calls watch, the tool answers with subscription: true.
func subscribeSteps(after ...model.Step) []model.Step {
	return append([]model.Step{
		{Text: "Watching the build.", ToolCall: call("work", `{"watch":"ci"}`)},
		{Text: "Subscribed."},
	}, after...)
}

func (sc *scenario) subscribe() string {
	sc.send(user("main", "u1", "watch the build"))
	sc.wait()
	c := sc.work.Calls()[0].CallID
	sc.send(runtime.Message{V: 1, ID: "sub-ok", ThreadID: "main", Kind: runtime.KindToolResult, ToolCallID: c,
		Text: "watching ci", Subscription: true})
	sc.wait()
	return c
}

func event(id, call, text string, associative, final bool) runtime.Message {
	return runtime.Message{V: 1, ID: id, ThreadID: "main", Kind: runtime.KindEvent, ToolCallID: call, Text: text,
		Associative: associative, Final: final}
}

func TestThreadedEventsReportedAndSilent(t *testing.T) {
	script := &model.Script{
		Threads: map[string][]model.Step{"main": subscribeSteps(model.Step{Text: "The build failed; looking into it."})},
		Match: []model.MatchRule{
			{Contains: "build failed", Steps: []model.Step{
				{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"the build failed on main"}`)},
			}},
			{Contains: "heartbeat", Steps: []model.Step{
				{ToolCall: call("close_thread", `{"thread_id":"$THREAD"}`)},
			}},
		},
	}
	sc := newScenario(t, model.NewScripted(script))
	c := sc.subscribe()
	sc.send(event("e1", c, "heartbeat: all green", false, false))
	sc.wait()
	sc.send(event("e2", c, "build failed: 3 tests", false, false))
	sc.check("threaded_events")
}

func TestAssociativeAndFinalEvents(t *testing.T) {
	script := &model.Script{Threads: map[string][]model.Step{"main": subscribeSteps(
		model.Step{Text: "Line 1 noted."},
		model.Step{Text: "The build exited with 0."},
	)}}
	sc := newScenario(t, model.NewScripted(script))
	c := sc.subscribe()
	sc.send(event("e1", c, "line 1: compiling", true, false))
	sc.wait()
	sc.send(event("e2", c, "exit code 0", true, true))
	sc.wait()
	sc.send(event("e3", c, "too late", true, false)) // the subscription has ended: rejected
	sc.check("associative_final_events")
}

func TestCancelSubscription(t *testing.T) {
	script := &model.Script{Threads: map[string][]model.Step{"main": subscribeSteps(
		model.Step{ToolCall: call("cancel_subscription", `{"tool_call_id":"$CALL:work"}`)},
		model.Step{Text: "Stopped watching."},
	)}}
	sc := newScenario(t, model.NewScripted(script))
	c := sc.subscribe()
	sc.send(user("main", "u2", "stop watching"))
	sc.wait()
	sc.send(event("e1", c, "line after cancel", true, false))
	sc.check("cancel_subscription")
}

func TestInterruptedSleepWithLateWakeUp(t *testing.T) {
	script := &model.Script{Default: []model.Step{
		{Text: "Waiting for the deploy.", ToolCall: call("sleep", `{"seconds":600}`)},
		{Text: "Awake early: what is up?"},
	}}
	sc := newScenario(t, model.NewScripted(script))
	sc.send(user("main", "u1", "wait ten minutes"))
	sc.wait()
	sc.send(user("main", "u2", "actually, check now"))
	sc.wait()
	sc.fire(0) // the wake-up arrives after the interruption
	sc.check("interrupted_sleep_late_wakeup")
}

func TestSleepUntilAcrossDST(t *testing.T) {
	// The clock says 2026-03-28 12:00 UTC; Europe/Paris moves from UTC+1 to
	// UTC+2 on 2026-03-29 at 02:00. 09:00 local on the 29th is 07:00 UTC.
	script := &model.Script{Default: []model.Step{
		{ToolCall: call("sleep_until", `{"date":"2026-03-29","time":"09:00","timezone":"Mars/Olympus"}`)},
		{ToolCall: call("sleep_until", `{"date":"2026-03-29","time":"09:00","timezone":"Europe/Paris"}`)},
		{Text: "Good morning."},
	}}
	sc := newScenario(t, model.NewScripted(script))
	sc.send(user("main", "u1", "wake me at nine tomorrow, Paris time"))
	sc.wait()
	sc.fire(0)
	sc.check("sleep_until_dst")
}

func TestCompactionInsideChild(t *testing.T) {
	big := &runtime.Usage{Input: 850, Output: 50, Total: 900}
	script := &model.Script{
		Threads: map[string][]model.Step{"main": {
			{ToolCall: call("spawn_thread", `{"instructions":"delta task: long research","child_of":["main"]}`)},
			{Text: "Delta is researching."},
			{Text: "Delta reported."},
		}},
		Match: []model.MatchRule{
			{Contains: "Summarise the conversation", Steps: []model.Step{{Text: "SUMMARY: delta researched the parser."}}},
			{Contains: "delta task", Steps: []model.Step{
				{Text: "Researching at length.", Usage: big},
				{ToolCall: call("report_to_parent", `{"report":"research done"}`)},
				{ToolCall: call("close_thread", `{"thread_id":"$THREAD"}`)},
			}},
		},
	}
	rec := &recordingModel{Model: model.NewScripted(script)}
	sc := newScenario(t, rec, func(c *Config) {
		c.Compaction = &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8}
	})
	sc.send(user("main", "u1", "research"))
	sc.waitReplies(1)
	sc.wait()
	th, _ := sc.store.Load(context.Background(), "main")
	child := th.State.Children[0]
	// The child's next completion sees the summary first.
	sc.send(runtime.Message{V: 1, ID: "pm-1", ThreadID: child, Kind: runtime.KindParent, From: "main", Text: "wrap up"})
	sc.wait()
	last := rec.last(child)
	if len(last) == 0 || last[0].Kind != runtime.ItemSummary || !strings.Contains(last[0].Text, "SUMMARY") {
		t.Fatalf("the child's model did not start from the summary: %s", kinds(last))
	}
	sc.check("compaction_in_child")
}

func TestCompactionWithPendingCall(t *testing.T) {
	big := &runtime.Usage{Input: 850, Output: 50, Total: 900}
	script := &model.Script{
		Threads: map[string][]model.Step{"main": {
			{Text: "Starting the long build.", ToolCall: call("work", `{"job":"build"}`), Usage: big},
			{Text: "The build is done."},
		}},
		Match: []model.MatchRule{
			{Contains: "Summarise the conversation", Steps: []model.Step{{Text: "SUMMARY: the user asked for a build."}}},
		},
	}
	rec := &recordingModel{Model: model.NewScripted(script)}
	sc := newScenario(t, rec, func(c *Config) {
		c.Compaction = &runtime.CompactionPolicy{ContextWindow: 1000, Threshold: 0.8}
	})
	sc.send(user("main", "u1", "build it"))
	sc.wait()
	c := sc.work.Calls()[0].CallID
	sc.send(result("main", "r1", c, "build ok"))
	sc.wait()
	last := rec.last("main")
	if got := kinds(last); got != "summary,tool_call,tool_result" {
		t.Fatalf("the model saw %s, want the summary, then the pending call and its result\n%s", got, sc.render(true))
	}
	sc.check("compaction_pending_call")
}

// recordingModel remembers the history of each thread's latest completion.
type recordingModel struct {
	runtime.Model
	mu   sync.Mutex
	hist map[string][]runtime.Item
}

func (r *recordingModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	r.mu.Lock()
	if r.hist == nil {
		r.hist = map[string][]runtime.Item{}
	}
	r.hist[req.ThreadID] = slices.Clone(req.History)
	r.mu.Unlock()
	return r.Model.Complete(ctx, req, w)
}

func (r *recordingModel) last(thread string) []runtime.Item {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hist[thread]
}
