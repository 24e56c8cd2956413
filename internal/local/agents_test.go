package local

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// agentEcho answers "<agent>:<system prompt>", so history shows which
// definition version each committed turn ran with; a user message "plan"
// makes it spawn a child running the worker agent.
type agentEcho struct{}

func (agentEcho) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	last := req.History[len(req.History)-1]
	for i := len(req.History) - 1; i > 0 && last.Kind == runtime.ItemMarker; i-- {
		last = req.History[i-1]
	}
	if last.Kind == runtime.ItemUser && last.Text == "plan" {
		w.ToolCall("", "spawn_thread", fmt.Sprintf(`{"instructions":"work","child_of":[%q],"agent":"worker"}`, req.ThreadID))
		return nil
	}
	w.Text(req.Agent + ":" + req.System)
	w.Usage(runtime.Usage{Input: 5, Output: 1, Total: 6})
	return nil
}

// crashEach kills each thread's first slice that reaches a crash point
// picked per thread (so every point is exercised across threads), and runs
// onCrash at that moment: a definition change between an attempt and its
// retry.
type crashEach struct {
	mu      sync.Mutex
	armed   bool
	crashed map[string]bool
	onCrash func()
	count   int
}

func (c *crashEach) Crash(p runtime.CrashPoint, thread string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.armed || c.crashed[thread] {
		return false
	}
	h := fnv.New32a()
	h.Write([]byte(thread))
	if runtime.CrashPoints[int(h.Sum32())%len(runtime.CrashPoints)] != p {
		return false
	}
	c.crashed[thread] = true
	c.count++
	if c.onCrash != nil {
		c.onCrash()
	}
	return true
}

func agentDefs(version string) []runtime.Agent {
	return []runtime.Agent{
		{Name: "planner", Instructions: "Plan. " + version, Spawnable: []string{"worker"}},
		{Name: "worker", Instructions: "Work. " + version, Tools: []string{runtime.ToolsetThreads}},
	}
}

// Two agents, a definition change between rounds and another one while a
// slice is being retried after a crash, at every crash point, with the
// embedded system redelivering: every thread's history agrees with what ran.
// Each committed reply was generated with the instructions of the version
// its history says applied (the version markers), and the state's version is
// the last one history names.
func TestAgentBindingAndVersionUnderCrashes(t *testing.T) {
	agents, err := runtime.NewAgentSet(agentDefs("v1"), "planner", nil)
	if err != nil {
		t.Fatal(err)
	}
	faults := &crashEach{crashed: map[string]bool{}}
	faults.onCrash = func() {
		if err := agents.Replace(agentDefs("v3"), "planner"); err != nil {
			t.Error(err)
		}
	}
	h := newHarness(t, agentEcho{}, func(c *Config) {
		tb := runtime.NewToolbox()
		for _, e := range runtime.ThreadTools() {
			tb.MustAdd(e)
		}
		c.Tools, c.Agents, c.Dedup = tb, agents, NewDedupStore(0)
	})
	h.sys.Engine().Faults = faults

	threads := []string{"p1", "p2", "w1", "w2", "p3", "w3", "p4", "w4", "p5", "w5", "p6", "w6", "p7", "w7"}
	for _, th := range threads {
		m := user(th, th+"-1", "hello")
		switch {
		case th == "p1":
			m.Text, m.Agent = "plan", "planner"
		case strings.HasPrefix(th, "w"):
			m.Agent = "worker"
		}
		h.send(m)
	}
	h.wait()
	if err := agents.Replace(agentDefs("v2"), "planner"); err != nil {
		t.Fatal(err)
	}
	faults.mu.Lock()
	faults.armed = true
	faults.mu.Unlock()
	p1, err := h.store.Load(context.Background(), "p1")
	if err != nil || len(p1.State.Children) != 1 {
		t.Fatalf("p1's children: %v (%v)", p1.State.Children, err)
	}
	all := append(slices.Clone(threads), p1.State.Children[0])
	for _, th := range all {
		h.send(user(th, th+"-2", "again"))
	}
	h.wait()

	instructions := map[string]string{}
	for _, v := range []string{"v1", "v2", "v3"} {
		for _, a := range agentDefs(v) {
			instructions[a.Hash()] = a.Name + ":" + a.Instructions
		}
	}
	for _, id := range all {
		th, err := h.store.Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		own := th.Own()
		// The version before the first marker is that marker's previous
		// one (or the state's, when nothing changed).
		current := th.State.AgentHash
		for _, it := range own {
			if it.Kind == runtime.ItemMarker && it.Name == runtime.AgentMarkerName {
				var m struct{ Previous string }
				_ = json.Unmarshal([]byte(it.Args), &m)
				current = m.Previous
				break
			}
		}
		replies, markers := 0, 0
		for _, it := range own {
			switch {
			case it.Kind == runtime.ItemMarker && it.Name == runtime.AgentMarkerName:
				var m struct{ Agent, Hash, Previous string }
				if err := json.Unmarshal([]byte(it.Args), &m); err != nil || m.Previous != current || m.Agent != th.State.Agent {
					t.Errorf("%s: marker %s after version %s", id, it.Args, current)
				}
				current, markers = m.Hash, markers+1
			case it.Kind == runtime.ItemAssistant:
				replies++
				if want := instructions[current]; it.Text != want {
					t.Errorf("%s: reply %q committed under version %s (%q)", id, it.Text, current, want)
				}
			}
		}
		if th.State.AgentHash != current || markers > 2 {
			t.Errorf("%s: state version %s, history's %s, %d markers", id, th.State.AgentHash, current, markers)
		}
		want := "planner"
		if strings.HasPrefix(id, "w") || strings.HasPrefix(id, "thr_") {
			want = "worker"
		}
		if th.State.Agent != want || replies < 2 {
			t.Errorf("%s: bound to %q with %d replies, want %s with 2 or more\n%s", id, th.State.Agent, replies, want, kinds(own))
		}
		if th.State.Usage.Input != 5*replies {
			t.Errorf("%s: usage %+v for %d replies (counted once per committed completion)", id, th.State.Usage, replies)
		}
	}
	faults.mu.Lock()
	defer faults.mu.Unlock()
	if faults.count < len(runtime.CrashPoints) {
		t.Errorf("only %d slices crashed", faults.count)
	}
}
