package runtime_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

func pinnedMsg(thread, id, text string) runtime.Message {
	m := agentMsg(thread, id, "", text)
	m.Upgrade = runtime.UpgradePinned
	return m
}

// TestPinnedThreadKeepsItsVersion: after a definition change, a pinned
// thread goes on with the instructions it started with (no marker), an
// unpinned one switches (one marker); an upgrade to a named version is
// recorded in the pinned thread's history and applies from the next
// completion; a version nobody keeps is refused.
func TestPinnedThreadKeepsItsVersion(t *testing.T) {
	t.Parallel()
	r := newAgentRig(t, twoAgents, "a")
	r.run(t, pinnedMsg("pin", "p1", "hello"))
	r.run(t, agentMsg("free", "f1", "", "hello"))
	v1 := twoAgents[0].Hash()
	if st := r.thread(t, "pin").State; st.Upgrade != runtime.UpgradePinned || st.AgentHash != v1 {
		t.Fatalf("pinned thread's state: upgrade %q hash %s", st.Upgrade, st.AgentHash)
	}
	if st := r.thread(t, "free").State; st.Upgrade != "" {
		t.Fatalf("unpinned thread's upgrade %q", st.Upgrade)
	}
	v2 := slices.Clone(twoAgents)
	v2[0].Instructions = "You are A, version 2."
	if err := r.agents.Replace(v2, "a"); err != nil {
		t.Fatal(err)
	}
	r.run(t, agentMsg("pin", "p2", "", "again"))
	if got := r.def.last().System; got != "You are A." {
		t.Fatalf("pinned thread after the change ran %q", got)
	}
	r.run(t, agentMsg("free", "f2", "", "again"))
	if got := r.def.last().System; got != "You are A, version 2." {
		t.Fatalf("unpinned thread after the change ran %q", got)
	}
	markers := func(id string) []runtime.Item {
		var out []runtime.Item
		for _, it := range r.thread(t, id).Own() {
			if it.Kind == runtime.ItemMarker && it.Name == runtime.AgentMarkerName {
				out = append(out, it)
			}
		}
		return out
	}
	if m := markers("pin"); len(m) != 0 {
		t.Fatalf("pinned thread recorded %+v", m)
	}
	if m := markers("free"); len(m) != 1 {
		t.Fatalf("unpinned thread recorded %d version markers, want 1", len(m))
	}

	// A version nobody keeps is refused, naming the field.
	bogus := runtime.Message{V: 1, ID: "up0", ThreadID: "pin", Kind: runtime.KindAgent, Agent: "a", Text: "0123456789abcdef0123456789abcdef"}
	res := r.run(t, bogus)
	var bm *runtime.BadMessageError
	if len(res.Rejected) != 1 || !errors.As(res.Rejected[0].Err, &bm) || bm.Field != "version" {
		t.Fatalf("upgrade to an unknown version: rejected %+v", res.Rejected)
	}
	// The upgrade is history; the next completion runs version 2, still pinned.
	r.run(t, runtime.Message{V: 1, ID: "up1", ThreadID: "pin", Kind: runtime.KindAgent, Agent: "a", Text: v2[0].Hash()})
	m := markers("pin")
	if len(m) != 1 || !strings.Contains(m[0].Text, "upgraded to definition version "+v2[0].Hash()) || !strings.Contains(m[0].Args, v1) {
		t.Fatalf("upgrade markers %+v", m)
	}
	r.run(t, agentMsg("pin", "p3", "", "after the upgrade"))
	if got := r.def.last().System; got != "You are A, version 2." {
		t.Fatalf("pinned thread after its upgrade ran %q", got)
	}
	// And it may go back to version 1, which the set keeps since the change.
	r.run(t, runtime.Message{V: 1, ID: "up2", ThreadID: "pin", Kind: runtime.KindAgent, Agent: "a", Text: v1})
	r.run(t, agentMsg("pin", "p4", "", "back"))
	if got, st := r.def.last().System, r.thread(t, "pin").State; got != "You are A." || st.AgentHash != v1 || st.Upgrade != runtime.UpgradePinned {
		t.Fatalf("after going back: ran %q, state %s %q", got, st.AgentHash, st.Upgrade)
	}
}

// TestPinnedToAVersionNobodyKeeps: a pinned thread whose version is gone
// fails with a clear error rather than silently running another one.
func TestPinnedToAVersionNobodyKeeps(t *testing.T) {
	t.Parallel()
	r := newAgentRig(t, twoAgents, "a")
	r.run(t, pinnedMsg("pin", "p1", "hello"))
	v2 := slices.Clone(twoAgents)
	v2[0].Instructions = "You are A, version 2."
	set := mustAgentSet(t, v2) // a new process whose set knows only version 2
	e, _ := newEngine(r.store, r.def)
	e.Agents = set
	_, err := e.RunSlice(t.Context(), runtime.SliceInput{ThreadID: "pin", Messages: []runtime.Message{agentMsg("pin", "p2", "", "again")}})
	th := r.thread(t, "pin")
	last := th.Own()[len(th.Own())-1]
	why := last.Text + last.Args
	if err != nil {
		why = err.Error()
	} else if !runtime.IsFailure(&last) {
		t.Fatalf("a pinned thread ran without its version: last item %+v", last)
	}
	if !strings.Contains(why, "pinned to version "+twoAgents[0].Hash()) {
		t.Fatalf("the failure does not say why: %s", why)
	}
	if got := r.def.last().System; got == "You are A, version 2." {
		t.Fatal("the pinned thread ran version 2")
	}
	// Keep makes the version resolvable again.
	if err := set.Keep([]runtime.StoredAgent{runtime.NewStoredAgent(twoAgents[0], th.Own()[0].At.Time())}); err != nil {
		t.Fatal(err)
	}
	if v, ok := set.AgentVersion("a", twoAgents[0].Hash()); !ok || v.Agent.Instructions != "You are A." {
		t.Fatalf("kept version: %+v %v", v, ok)
	}
	bad := runtime.NewStoredAgent(twoAgents[0], th.Own()[0].At.Time())
	bad.Hash = "ffff"
	if err := set.Keep([]runtime.StoredAgent{bad}); err == nil {
		t.Fatal("a version whose hash is not its definition's was kept")
	}
}

func mustAgentSet(t *testing.T, defs []runtime.Agent) *runtime.AgentSet {
	t.Helper()
	s, err := runtime.NewAgentSet(defs, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
