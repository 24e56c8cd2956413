package local

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Limits.MaxChildren bounds the children a thread has alive at once: a
// spawn_thread beyond it gets an error result the model can read and
// creates nothing; a child that closes (here silently, without a report)
// tells its parent, which may then spawn again. The close notice enters
// no history.
func TestChildrenLimit(t *testing.T) {
	spawn := func(task string) model.Step {
		return model.Step{ToolCall: call("spawn_thread", `{"instructions":"`+task+`","child_of":["main"]}`)}
	}
	script := &model.Script{
		Threads: map[string][]model.Step{"main": {
			spawn("alpha task: wait"), {Text: "Alpha runs."},
			spawn("beta task: wait"), {Text: "Beta was refused."},
			spawn("gamma task: wait"), {Text: "Gamma runs."},
		}},
		Match: []model.MatchRule{
			{Contains: "alpha task", Steps: []model.Step{{Text: "Waiting."}, {ToolCall: call("close_thread", `{"thread_id":"$THREAD"}`)}}},
			{Contains: "gamma task", Steps: []model.Step{{Text: "Waiting."}}},
		},
	}
	sc := newScenario(t, model.NewScripted(script), func(c *Config) { c.Limits.MaxChildren = 1 })
	sc.send(user("main", "u1", "start alpha"))
	sc.wait()
	sc.send(user("main", "u2", "start beta"))
	sc.wait()
	st := sc.state("main")
	if len(st.Children) != 1 || !slices.Equal(st.Open, st.Children) {
		t.Fatalf("children %q, open %q: want alpha alone, alive", st.Children, st.Open)
	}
	alpha := st.Children[0]
	var refused bool
	for _, it := range sc.history("main") {
		refused = refused || (it.Kind == runtime.ItemToolResult && it.IsError && strings.Contains(it.Text, "1 children alive, its limit"))
	}
	if !refused {
		t.Fatalf("the second spawn was not refused with a readable error\n%s", sc.render(true))
	}
	before := len(sc.history("main"))
	// Alpha closes silently: main learns it, with nothing in its history.
	sc.send(runtime.Message{V: 1, ID: "pm-1", ThreadID: alpha, Kind: runtime.KindParent, From: "main", Text: "finish"})
	sc.wait()
	if st := sc.state("main"); len(st.Open) != 0 || !sc.state(alpha).Closed {
		t.Fatalf("after alpha closed: main's open children %q, alpha closed %v", st.Open, sc.state(alpha).Closed)
	}
	if n := len(sc.history("main")); n != before {
		t.Fatalf("the close notice added %d items to main's history", n-before)
	}
	sc.send(user("main", "u3", "start gamma"))
	sc.wait()
	if st := sc.state("main"); len(st.Children) != 2 || len(st.Open) != 1 || st.Open[0] != st.Children[1] {
		t.Fatalf("after gamma: children %q, open %q", st.Children, st.Open)
	}
	if dl, _ := sc.sys.DeadLetters(); len(dl) > 0 {
		t.Fatalf("dead letter: %+v", dl[0])
	}
}
