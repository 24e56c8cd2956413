package local

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

func (sc *scenario) state(id string) runtime.ThreadState {
	sc.t.Helper()
	th, err := sc.store.Load(context.Background(), id)
	if err != nil {
		sc.t.Fatal(err)
	}
	return th.State
}

// sentClasses checks that every message the engine sent carries the class
// recorded in its target thread's state, and returns how many it checked.
func (sc *scenario) checkSentClasses() int {
	sc.t.Helper()
	sc.mu.Lock()
	sent := append([]runtime.Message(nil), sc.sent...)
	sc.mu.Unlock()
	n := 0
	for _, m := range sent {
		if m.Kind == runtime.KindUser || m.Kind == runtime.KindEvent || m.Kind == runtime.KindToolResult {
			continue // sent by the test or a tool, not by the engine
		}
		want := sc.state(m.ThreadID).Class
		if m.Class != want {
			sc.t.Errorf("message %s (%s) to thread %s has class %q; the thread's class is %q", m.ID, m.Kind, m.ThreadID, m.Class, want)
		}
		n++
	}
	return n
}

// A user's thread and the children it spawns are interactive; the
// temporary threads that handle subscription events are background; a
// report from a background child to an interactive parent is routed as
// interactive (the parent's class).
func TestClassesOfThreadsAndTheirMessages(t *testing.T) {
	script := &model.Script{
		Threads: map[string][]model.Step{"main": subscribeSteps(
			model.Step{Text: "The build failed.", ToolCall: call("spawn_thread", `{"instructions":"alpha task","child_of":["main"]}`)},
			model.Step{Text: "Alpha is working."},
			model.Step{Text: "Alpha reported."},
		)},
		Match: []model.MatchRule{
			{Contains: "alpha task", Steps: []model.Step{
				{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"alpha done"}`)},
			}},
			{Contains: "build failed", Steps: []model.Step{
				{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"the build failed"}`)},
			}},
		},
	}
	sc := newScenario(t, model.NewScripted(script))
	c := sc.subscribe()
	if calls := sc.work.Calls(); len(calls) != 1 || calls[0].Class != runtime.ClassInteractive {
		t.Fatalf("dispatches %+v: want one, with the caller's class interactive", calls)
	}
	sc.send(event("e1", c, "build failed: 3 tests", false, false))
	sc.wait()

	want := map[string]runtime.Class{"main": runtime.ClassInteractive}
	for _, id := range sc.store.Threads() {
		st := sc.state(id)
		switch {
		case id == "main":
		case st.Temporary:
			want[id] = runtime.ClassBackground
		default:
			want[id] = runtime.ClassInteractive
		}
		if st.Class != want[id] {
			t.Errorf("thread %s (temporary %v) has class %q, want %q", id, st.Temporary, st.Class, want[id])
		}
		if st.Parent != "" && st.ParentClass != runtime.ClassInteractive {
			t.Errorf("thread %s records parent class %q, want interactive", id, st.ParentClass)
		}
	}
	if len(want) != 3 {
		t.Fatalf("threads %v: want main, a spawned child and an event child", want)
	}
	if n := sc.checkSentClasses(); n < 4 {
		t.Fatalf("checked %d engine messages, want at least 4 (2 starts, 2 reports)", n)
	}
}

// A thread created by a background message is background for good, and so
// are the children it spawns; a later message without a class does not
// change it.
func TestBackgroundRootStaysBackground(t *testing.T) {
	script := &model.Script{
		Threads: map[string][]model.Step{"job": {
			{ToolCall: call("spawn_thread", `{"instructions":"beta task","child_of":["job"]}`)},
			{Text: "Spawned."},
			{Text: "Beta reported."},
			{Text: "Second message."},
		}},
		Match: []model.MatchRule{{Contains: "beta task", Steps: []model.Step{
			{ToolCall: call("close_thread", `{"thread_id":"$THREAD","report_to_parent":"beta done"}`)},
		}}},
	}
	sc := newScenario(t, model.NewScripted(script))
	m := user("job", "u1", "nightly report")
	m.Class = runtime.ClassBackground
	sc.send(m)
	sc.wait()
	sc.send(user("job", "u2", "and another"))
	sc.wait()
	for _, id := range sc.store.Threads() {
		if c := sc.state(id).Class; c != runtime.ClassBackground {
			t.Errorf("thread %s has class %q, want background", id, c)
		}
	}
	if n := sc.checkSentClasses(); n < 2 {
		t.Fatalf("checked %d engine messages, want at least 2 (start, report)", n)
	}
}

// An agent's Priority is the class of a new root thread no message gave a
// class; a message's class wins over it.
func TestAgentPrioritySetsRootClass(t *testing.T) {
	agents, err := runtime.NewAgentSet([]runtime.Agent{
		{Name: "nightly", Instructions: "Summarise exports.", Priority: runtime.PriorityBackground},
		{Name: "chat", Instructions: "Talk."},
	}, "chat", nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := newScenario(t, agentEcho{}, func(c *Config) { c.Agents = agents })
	a := user("job", "u1", "export done")
	a.Agent = "nightly"
	b := user("job2", "u1", "export done")
	b.Agent, b.Class = "nightly", runtime.ClassInteractive
	c := user("talk", "u1", "hello")
	sc.send(a, b, c)
	sc.wait()
	for id, want := range map[string]runtime.Class{"job": runtime.ClassBackground, "job2": runtime.ClassInteractive, "talk": runtime.ClassInteractive} {
		if got := sc.state(id).Class; got != want {
			t.Errorf("thread %s has class %q, want %q", id, got, want)
		}
	}
}
