package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

func TestAgentValidate(t *testing.T) {
	t.Parallel()
	ok := runtime.Agent{Name: "reviewer", Instructions: "Review code."}
	cases := []struct {
		name  string
		edit  func(a *runtime.Agent)
		field string
	}{
		{"bad name", func(a *runtime.Agent) { a.Name = "has space" }, "name"},
		{"empty name", func(a *runtime.Agent) { a.Name = "" }, "name"},
		{"long name", func(a *runtime.Agent) { a.Name = strings.Repeat("a", 65) }, "name"},
		{"empty instructions", func(a *runtime.Agent) { a.Instructions = " \n" }, "instructions"},
		{"duplicate tool", func(a *runtime.Agent) { a.Tools = []string{"x", "x"} }, "tools[1]"},
		{"empty tool", func(a *runtime.Agent) { a.Tools = []string{""} }, "tools[0]"},
		{"negative limit", func(a *runtime.Agent) { a.Limits = &runtime.AgentLimits{MaxCompletions: -1} }, "limits.max_completions"},
		{"bad threshold", func(a *runtime.Agent) { a.Limits = &runtime.AgentLimits{CompactionThreshold: 1.5} }, "limits.compaction_threshold"},
		// The bound is exclusive: a threshold of 1 (compact only once the window is full) is refused.
		{"threshold of 1", func(a *runtime.Agent) { a.Limits = &runtime.AgentLimits{CompactionThreshold: 1} }, "limits.compaction_threshold"},
		{"negative threshold", func(a *runtime.Agent) { a.Limits = &runtime.AgentLimits{CompactionThreshold: -0.5} }, "limits.compaction_threshold"},
		{"bad spawnable", func(a *runtime.Agent) { a.Spawnable = []string{"a b"} }, "spawnable[0]"},
		{"bad priority", func(a *runtime.Agent) { a.Priority = "urgent" }, "priority"},
		{"bad network", func(a *runtime.Agent) { a.Network = "sometimes" }, "network"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid agent: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := ok
			c.edit(&a)
			var ae *runtime.AgentError
			if err := a.Validate(); !errors.As(err, &ae) || ae.Field != c.field {
				t.Fatalf("Validate() = %v, want an *AgentError for field %q", err, c.field)
			}
		})
	}
}

func TestValidateAgents(t *testing.T) {
	t.Parallel()
	a := runtime.Agent{Name: "a", Instructions: "A."}
	b := runtime.Agent{Name: "b", Instructions: "B.", Spawnable: []string{"a", "c"}}
	cases := []struct {
		name  string
		defs  []runtime.Agent
		def   string
		field string
	}{
		{"none", nil, "", "agents"},
		{"duplicate", []runtime.Agent{a, a}, "a", "agents[1].name"},
		{"unknown spawnable", []runtime.Agent{a, b}, "a", "agents[1].spawnable[1]"},
		{"unknown default", []runtime.Agent{a}, "zz", "default_agent"},
		{"no default of two", []runtime.Agent{a, {Name: "b", Instructions: "B."}}, "", "default_agent"},
		{"invalid entry", []runtime.Agent{a, {Name: "b"}}, "a", "agents[1].instructions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ae *runtime.AgentError
			if err := runtime.ValidateAgents(c.defs, c.def); !errors.As(err, &ae) || ae.Field != c.field {
				t.Fatalf("ValidateAgents = %v, want an *AgentError for field %q", err, c.field)
			}
		})
	}
	if err := runtime.ValidateAgents([]runtime.Agent{a}, ""); err != nil {
		t.Fatalf("one agent without a default: %v", err)
	}
}

// The hash is the content version stored in thread state: it must not
// depend on the process, and must change with any field.
func TestAgentHashIsStableAndContentBased(t *testing.T) {
	t.Parallel()
	a := runtime.Agent{Name: "reviewer", Instructions: "Review <code> & say so.", Model: "claude", Tools: []string{"examples"}}
	const want = "9ed0e3716440469ed421a65318788497" // pinned: a change here re-versions every deployed thread
	if got := a.Hash(); got != want {
		t.Errorf("Hash() = %s, want the pinned %s", got, want)
	}
	seen := map[string]bool{a.Hash(): true}
	for _, edit := range []func(*runtime.Agent){
		func(a *runtime.Agent) { a.Instructions += "!" },
		func(a *runtime.Agent) { a.Model = "other" },
		func(a *runtime.Agent) { a.Tools = nil },
		func(a *runtime.Agent) { a.Spawnable = []string{"reviewer"} },
		func(a *runtime.Agent) { a.Limits = &runtime.AgentLimits{MaxCompletions: 2} },
		func(a *runtime.Agent) { a.Priority = runtime.PriorityBackground },
	} {
		b := a
		edit(&b)
		if h := b.Hash(); seen[h] {
			t.Errorf("edited definition %+v hashes like another one (%s)", b, h)
		} else {
			seen[h] = true
		}
	}
}

// sysModel answers with the system prompt it got ("sys=<System>"), or
// makes the tool call a user message asks for ("call <name> <args>").
type sysModel struct {
	name string
	mu   sync.Mutex
	reqs []runtime.CompletionRequest
}

func (m *sysModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	m.mu.Lock()
	m.reqs = append(m.reqs, *req)
	m.mu.Unlock()
	last := req.History[len(req.History)-1]
	for i := len(req.History) - 1; i > 0 && last.Kind == runtime.ItemMarker; i-- { // providers skip markers
		last = req.History[i-1]
	}
	if last.Kind == runtime.ItemUser && strings.HasPrefix(last.Text, "call ") {
		name, args, _ := strings.Cut(strings.TrimPrefix(last.Text, "call "), " ")
		w.ToolCall("", name, args)
		return nil
	}
	w.Text(m.name + " sys=" + req.System)
	w.Usage(runtime.Usage{Input: 10, Output: 2, Cached: 3, CacheWrite: 1, Total: 12})
	return nil
}

func (m *sysModel) last() runtime.CompletionRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reqs[len(m.reqs)-1]
}

type agentRig struct {
	store   *local.HistoryStore
	engine  *runtime.Engine
	agents  *runtime.AgentSet
	def, mB *sysModel
	sent    *sink
	watch   *runtimetest.RecordingTool
}

func newAgentRig(t *testing.T, defs []runtime.Agent, def string) *agentRig {
	t.Helper()
	r := &agentRig{store: local.NewHistoryStore(), def: &sysModel{name: "m-default"}, mB: &sysModel{name: "m-b"}}
	var err error
	r.agents, err = runtime.NewAgentSet(defs, def, func(name string) (runtime.Model, int, error) {
		switch name {
		case "":
			return nil, 0, nil // the engine's model
		case "b":
			return r.mB, 1000, nil
		}
		return nil, 0, fmt.Errorf("model %q is not in the catalog", name)
	})
	if err != nil {
		t.Fatal(err)
	}
	r.engine, r.sent = newEngine(r.store, r.def)
	tb := runtime.NewToolbox()
	for _, e := range runtime.ThreadTools() {
		tb.MustAdd(e)
	}
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "echo"}, Toolset: "examples", Sync: runtimetest.SyncFunc(
		func(ctx context.Context, env *runtime.SyncEnv, inv runtime.Invocation) (runtime.ToolOutput, error) {
			return runtime.ToolOutput{Text: "echo"}, nil
		})})
	r.watch = &runtimetest.RecordingTool{}
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "watch"}, Toolset: "examples", Async: r.watch})
	r.engine.Tools = tb
	r.engine.Agents = r.agents
	return r
}

func (r *agentRig) run(t *testing.T, msgs ...runtime.Message) *runtime.SliceResult {
	t.Helper()
	res, err := r.engine.RunSlice(context.Background(), runtime.SliceInput{ThreadID: msgs[0].ThreadID, Messages: msgs})
	if err != nil {
		t.Fatalf("slice: %v", err)
	}
	return res
}

func (r *agentRig) thread(t *testing.T, id string) *runtime.Thread {
	t.Helper()
	th, err := r.store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func agentMsg(thread, id, agent, text string) runtime.Message {
	return runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindUser, Text: text, Agent: agent}
}

var twoAgents = []runtime.Agent{
	{Name: "a", Instructions: "You are A.", Tools: []string{runtime.ToolsetThreads}, Spawnable: []string{"a", "b"}},
	{Name: "b", Instructions: "You are B.", Model: "b"},
}

func TestThreadBindsToNamedOrDefaultAgent(t *testing.T) {
	t.Parallel()
	r := newAgentRig(t, twoAgents, "a")
	r.run(t, agentMsg("t1", "u1", "", "hello"))
	r.run(t, agentMsg("t2", "u2", "b", "hello"))

	st1, st2 := r.thread(t, "t1").State, r.thread(t, "t2").State
	a, b := twoAgents[0], twoAgents[1]
	if st1.Agent != "a" || st1.AgentHash != a.Hash() {
		t.Errorf("t1 bound to %q@%s, want the default a@%s", st1.Agent, st1.AgentHash, a.Hash())
	}
	if st2.Agent != "b" || st2.AgentHash != b.Hash() {
		t.Errorf("t2 bound to %q@%s, want b@%s", st2.Agent, st2.AgentHash, b.Hash())
	}
	// Each ran its own instructions on its own model, with its own tools.
	ra, rb := r.def.last(), r.mB.last()
	if ra.System != "You are A." || ra.Agent != "a" || rb.System != "You are B." || rb.Agent != "b" {
		t.Errorf("system prompts: a got %q (%s), b got %q (%s)", ra.System, ra.Agent, rb.System, rb.Agent)
	}
	names := func(specs []runtime.ToolSpec) []string {
		var out []string
		for _, s := range specs {
			out = append(out, s.Name)
		}
		return out
	}
	if got := names(ra.Tools); slices.Contains(got, "echo") || !slices.Contains(got, "spawn_thread") {
		t.Errorf("agent a (tools: threads) was offered %v", got)
	}
	if got := names(rb.Tools); !slices.Contains(got, "echo") || !slices.Contains(got, "spawn_thread") {
		t.Errorf("agent b (all tools) was offered %v", got)
	}
	// Usage accumulates per thread, in the committed state.
	r.run(t, agentMsg("t1", "u3", "a", "again"))
	if u := r.thread(t, "t1").State.Usage; u != (runtime.Usage{Input: 20, Output: 4, Cached: 6, CacheWrite: 2, Total: 24}) {
		t.Errorf("cumulative usage of t1 = %+v after two completions", u)
	}
	// A call to a tool the agent may not use is an unknown tool.
	r.run(t, agentMsg("t1", "u4", "", `call echo {}`))
	items := r.thread(t, "t1").Own()
	var res runtime.Item
	for _, it := range items {
		if it.Kind == runtime.ItemToolResult {
			res = it
		}
	}
	if !res.IsError || !strings.Contains(res.Text, `unknown tool "echo"`) {
		t.Errorf("agent a calling echo got %+v, want an unknown-tool error", res)
	}
}

func TestMessageNamingAnotherOrUnknownAgentIsRejected(t *testing.T) {
	t.Parallel()
	r := newAgentRig(t, twoAgents, "a")
	r.run(t, agentMsg("t", "u1", "", "hello")) // bound to the default, a
	v := r.thread(t, "t").State.Version
	for _, c := range []struct{ agent, want string }{
		{"b", `runs as agent "a"`},
		{"nobody", `unknown agent "nobody"`},
	} {
		res := r.run(t, agentMsg("t", "x-"+c.agent, c.agent, "switch"))
		var bm *runtime.BadMessageError
		if len(res.Rejected) != 1 || !errors.As(res.Rejected[0].Err, &bm) || bm.Field != "agent" || !strings.Contains(bm.Reason, c.want) {
			t.Errorf("message naming %q: rejected %+v, want field agent: %s", c.agent, res.Rejected, c.want)
		}
	}
	if st := r.thread(t, "t").State; st.Agent != "a" || st.Version != v {
		t.Errorf("state after rejections: agent %q version %d, want a at %d (nothing committed)", st.Agent, st.Version, v)
	}
	// Naming the bound agent again is fine.
	if res := r.run(t, agentMsg("t", "u2", "a", "hello again")); len(res.Rejected) != 0 {
		t.Errorf("naming the bound agent: rejected %+v", res.Rejected)
	}
}

func TestDefinitionChangeIsRecordedOnceInHistory(t *testing.T) {
	t.Parallel()
	r := newAgentRig(t, twoAgents, "a")
	r.run(t, agentMsg("t", "u1", "", "hello"))
	v2 := slices.Clone(twoAgents)
	v2[0].Instructions = "You are A, version 2."
	if err := r.agents.Replace(v2, "a"); err != nil {
		t.Fatal(err)
	}
	r.run(t, agentMsg("t", "u2", "", "hello"))
	r.run(t, agentMsg("t", "u3", "", "hello"))
	var markers []runtime.Item
	for _, it := range r.thread(t, "t").Own() {
		if it.Kind == runtime.ItemMarker && it.Name == runtime.AgentMarkerName {
			markers = append(markers, it)
		}
	}
	if len(markers) != 1 || !strings.Contains(markers[0].Text, v2[0].Hash()) || !strings.Contains(markers[0].Args, twoAgents[0].Hash()) {
		t.Fatalf("agent markers %+v, want one naming %s (was %s)", markers, v2[0].Hash(), twoAgents[0].Hash())
	}
	if got := r.def.last().System; got != "You are A, version 2." {
		t.Errorf("after the change the model got %q", got)
	}
}

// crashOnce kills the first slice that reaches point on thread.
type crashOnce struct {
	point  runtime.CrashPoint
	mu     sync.Mutex
	done   bool
	before func() // runs at the crash, before the retry
}

func (c *crashOnce) Crash(p runtime.CrashPoint, thread string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || p != c.point {
		return false
	}
	c.done = true
	if c.before != nil {
		c.before()
	}
	return true
}

// Redelivery and crash at every point: a definition that changes again
// between the crashed attempt and its retry never makes history disagree
// with what ran. The committed version marker names exactly the
// instructions the committed reply was generated with, and there is one
// marker per version that reached history.
func TestAgentVersionIdenticalAcrossRetries(t *testing.T) {
	t.Parallel()
	for _, p := range runtime.CrashPoints {
		t.Run(string(p), func(t *testing.T) {
			r := newAgentRig(t, twoAgents, "a")
			r.run(t, agentMsg("t", "u1", "b", "hello")) // bound to b, version 1
			v2 := slices.Clone(twoAgents)
			v2[1].Instructions = "You are B, version 2."
			v3 := slices.Clone(twoAgents)
			v3[1].Instructions = "You are B, version 3."
			if err := r.agents.Replace(v2, "a"); err != nil {
				t.Fatal(err)
			}
			c := &crashOnce{point: p, before: func() {
				if err := r.agents.Replace(v3, "a"); err != nil {
					t.Error(err)
				}
			}}
			r.engine.Faults = c
			in := runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{agentMsg("t", "u2", "", "call spawn_thread "+
				`{"instructions":"go","child_of":["t"]}`)}}
			var err error
			for attempt := 0; attempt < 3; attempt++ { // redelivered until it succeeds
				if _, err = r.engine.RunSlice(context.Background(), in); err == nil {
					break
				}
				if !errors.Is(err, runtime.ErrCrashed) {
					t.Fatalf("slice: %v", err)
				}
			}
			if err != nil {
				t.Fatalf("slice never succeeded: %v", err)
			}
			th := r.thread(t, "t")
			hashes := map[string]string{twoAgents[1].Hash(): "You are B.", v2[1].Hash(): "You are B, version 2.", v3[1].Hash(): "You are B, version 3."}
			current := twoAgents[1].Hash()
			markers := 0
			for _, it := range th.Own() {
				switch {
				case it.Kind == runtime.ItemMarker && it.Name == runtime.AgentMarkerName:
					markers++
					var m struct{ Hash, Previous string }
					if err := json.Unmarshal([]byte(it.Args), &m); err != nil || m.Previous != current {
						t.Errorf("marker %s: previous %q, want %q (%v)", it.Args, m.Previous, current, err)
					}
					current = m.Hash
				case it.Kind == runtime.ItemAssistant:
					if want := "m-b sys=" + hashes[current]; it.Text != want {
						t.Errorf("reply %q committed under version %s, want %q", it.Text, current, want)
					}
				}
			}
			if th.State.AgentHash != current || markers > 1 {
				t.Errorf("state hash %s, history's %s, %d markers (want at most one)", th.State.AgentHash, current, markers)
			}
			// The child spawned in the committed turn runs the version
			// its parent's turn ran with.
			var call string
			for _, it := range th.Own() {
				if it.Kind == runtime.ItemToolCall {
					call = it.CallID
				}
			}
			child := r.thread(t, runtime.ChildThreadID("t", call))
			if child.State.Agent != "b" || child.State.AgentHash != current {
				t.Errorf("child bound to %s@%s, want b@%s", child.State.Agent, child.State.AgentHash, current)
			}
		})
	}
}

func TestSpawnThreadAgentArgument(t *testing.T) {
	t.Parallel()
	r := newAgentRig(t, twoAgents, "a")
	r.run(t, agentMsg("pa", "u1", "a", `call spawn_thread {"instructions":"go","child_of":["pa"],"agent":"b"}`))
	r.run(t, agentMsg("pb", "u2", "b", `call spawn_thread {"instructions":"go","child_of":["pb"],"agent":"a"}`))
	r.run(t, agentMsg("pc", "u3", "b", `call spawn_thread {"instructions":"go","child_of":["pc"]}`))

	result := func(thread string) runtime.Item {
		for _, it := range r.thread(t, thread).Own() {
			if it.Kind == runtime.ItemToolResult {
				return it
			}
		}
		t.Fatalf("no result in %s", thread)
		return runtime.Item{}
	}
	if res := result("pa"); res.IsError {
		t.Errorf("a spawning b (spawnable): %s", res.Text)
	}
	if res := result("pb"); !res.IsError || !strings.Contains(res.Text, `may not be spawned by agent "b"`) {
		t.Errorf("b spawning a (b may spawn only itself): %+v", res)
	}
	if res := result("pc"); res.IsError {
		t.Errorf("b spawning without agent: %s", res.Text)
	}
	for _, c := range []struct{ parent, want string }{{"pa", "b"}, {"pc", "b"}} {
		call := r.thread(t, c.parent).Own()[1]
		st := r.thread(t, runtime.ChildThreadID(c.parent, call.CallID)).State
		if st.Agent != c.want || st.AgentHash == "" {
			t.Errorf("child of %s bound to %q@%q, want %s", c.parent, st.Agent, st.AgentHash, c.want)
		}
	}
	// The child runs b's instructions on b's model.
	for _, m := range r.sent.msgs {
		if m.Kind == runtime.KindStart {
			r.run(t, m)
		}
	}
	if got := r.mB.last(); got.System != "You are B." {
		t.Errorf("child's system prompt %q", got.System)
	}
}

func TestUndefinedAgentEndsWithErrorReply(t *testing.T) {
	t.Parallel()
	r := newAgentRig(t, twoAgents, "a")
	r.run(t, agentMsg("t", "u1", "b", "hello"))
	if err := r.agents.Replace([]runtime.Agent{{Name: "a", Instructions: "You are A."}}, "a"); err != nil {
		t.Fatal(err)
	}
	res := r.run(t, agentMsg("t", "u2", "", "hello"))
	if res.ModelErr == nil || !strings.Contains(res.ModelErr.Error(), `agent "b", which is not defined`) {
		t.Fatalf("ModelErr = %v", res.ModelErr)
	}
}

// An agent's limits override the engine's: max_completions caps the slice
// (the work continues in a continuation), compaction_threshold and the
// model's context window decide when a thread is summarised.
func TestAgentLimits(t *testing.T) {
	t.Parallel()
	defs := []runtime.Agent{
		{Name: "a", Instructions: "A.", Limits: &runtime.AgentLimits{MaxCompletions: 1}},
		{Name: "b", Instructions: "B.", Model: "b", Limits: &runtime.AgentLimits{CompactionThreshold: 0.01}},
	}
	r := newAgentRig(t, defs, "a")
	r.engine.Compaction = &runtime.CompactionPolicy{ContextWindow: 1 << 30} // never, by the engine's numbers
	// echo answers inline, so without the cap the model would run again.
	res := r.run(t, agentMsg("ta", "u1", "a", "call echo {}"))
	if res.Completions != 1 || !res.Continued {
		t.Errorf("agent a (max_completions 1): %d completions, continued %v", res.Completions, res.Continued)
	}
	// b's model has a 1000-token window (the rig's resolver): 12 tokens
	// used is over 1%.
	r.run(t, agentMsg("tb", "u1", "b", "hello"))
	if st := r.thread(t, "tb").State; st.Compacting == "" {
		t.Errorf("agent b (threshold 0.01 of 1000 tokens, 12 used): no compaction started")
	} else if child := r.thread(t, st.Compacting).State; child.Agent != "b" || child.AgentHash != defs[1].Hash() {
		t.Errorf("compaction child bound to %s@%s, want b with its parent's version", child.Agent, child.AgentHash)
	}
}

// A threaded subscription event's temporary child runs as its parent's
// agent, at the parent's version: the parent's instructions in front.
func TestThreadedEventChildRunsParentsAgent(t *testing.T) {
	t.Parallel()
	r := newAgentRig(t, twoAgents, "a")
	r.run(t, agentMsg("p", "u1", "b", "call watch {}"))
	calls := r.watch.Calls()
	if len(calls) != 1 {
		t.Fatalf("watch dispatched %d times", len(calls))
	}
	c := calls[0].CallID
	r.run(t, runtime.Message{V: 1, ID: "sub", ThreadID: "p", Kind: runtime.KindToolResult, ToolCallID: c, Text: "watching", Subscription: true})
	r.run(t, runtime.Message{V: 1, ID: "e1", ThreadID: "p", Kind: runtime.KindEvent, ToolCallID: c, Text: "build failed"})
	var start *runtime.Message
	for i := range r.sent.msgs {
		if m := r.sent.msgs[i]; m.Kind == runtime.KindStart && m.ToolCallID == c {
			start = &r.sent.msgs[i]
		}
	}
	if start == nil {
		t.Fatal("no threaded-event child was started")
	}
	if st := r.thread(t, start.ThreadID).State; st.Agent != "b" || st.AgentHash != twoAgents[1].Hash() || !st.Temporary {
		t.Fatalf("event child state %+v, want agent b at the parent's version", st)
	}
	r.run(t, *start)
	if got := r.mB.last(); got.ThreadID != start.ThreadID || got.System != "You are B." {
		t.Errorf("event child's completion: thread %s system %q", got.ThreadID, got.System)
	}
}

func TestDecodeAgentsDocErrorsNameTheField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ doc, field string }{
		{`{"agents":[{"name":"a","instrutions":"x"}]}`, "instrutions"},
		{`{"agents":[{"name":"a","instructions":7}]}`, "agents.instructions"},
		{`{"agents":[{"name":"a","instructions":"x"}]} {}`, ""},
	} {
		var ae *runtime.AgentError
		if _, err := runtime.DecodeAgentsDoc([]byte(c.doc)); !errors.As(err, &ae) || ae.Field != c.field {
			t.Errorf("DecodeAgentsDoc(%s) = %v, want an *AgentError for field %q", c.doc, err, c.field)
		}
	}
	doc, err := runtime.DecodeAgentsDoc([]byte(`{"agents":[{"name":"a","instructions_file":"a.md"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defs, err := doc.Resolve("dir", func(p string) ([]byte, error) {
		if p != "dir/a.md" {
			return nil, fmt.Errorf("read %s", p)
		}
		return []byte("From a file."), nil
	})
	if err != nil || defs[0].Instructions != "From a file." {
		t.Errorf("Resolve = %+v, %v", defs, err)
	}
}

// A dispatched call names the thread's agent and its network policy
// (the RAP dispatcher sends them as x-agentslice-agent, so a tool server
// shared by several agents can tell them apart).
func TestDispatchNamesTheAgent(t *testing.T) {
	t.Parallel()
	defs := []runtime.Agent{
		{Name: "offline", Instructions: "You are offline.", Network: runtime.NetworkDeny},
		{Name: "plain", Instructions: "You are plain."},
	}
	r := newAgentRig(t, defs, "plain")
	r.run(t, agentMsg("t_off", "u1", "offline", "call watch {}"))
	r.run(t, agentMsg("t_plain", "u2", "", "call watch {}"))
	calls := r.watch.Calls()
	if len(calls) != 2 {
		t.Fatalf("watch dispatched %d times", len(calls))
	}
	got := map[string][2]string{}
	for _, c := range calls {
		got[c.ThreadID] = [2]string{c.Agent, c.AgentNetwork}
	}
	if got["t_off"] != [2]string{"offline", "deny"} || got["t_plain"] != [2]string{"plain", ""} {
		t.Fatalf("dispatched agents %v, want offline/deny and plain with no network field", got)
	}
}

// A new root thread whose first message names no class takes its agent's
// Priority; one whose message names a class keeps it (agent_slice.go's
// applyAgent).
func TestNewRootTakesItsAgentsPriority(t *testing.T) {
	t.Parallel()
	r := newAgentRig(t, []runtime.Agent{{Name: "batch", Instructions: "You run in the background.", Priority: runtime.PriorityBackground}}, "batch")
	r.run(t, agentMsg("unnamed", "u1", "", "hello"))
	named := agentMsg("named", "u2", "", "hello")
	named.Class = runtime.ClassInteractive
	r.run(t, named)
	if c := r.thread(t, "unnamed").State.Class; c != runtime.ClassBackground {
		t.Errorf("a new root with no class named: class %q, want its agent's priority %q", c, runtime.ClassBackground)
	}
	if c := r.thread(t, "named").State.Class; c != runtime.ClassInteractive {
		t.Errorf("a new root whose message named %q: class %q", runtime.ClassInteractive, c)
	}
}
