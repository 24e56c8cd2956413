package local

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// chainModel builds a chain of threads: "main" spawns level 1, each level
// spawns the next up to levels, and every thread then waits. A
// compaction child answers with a summary. stack returns a thread's
// stack (from the store), for spawn_thread's child_of.
type chainModel struct {
	levels int
	stack  func(id string) []string
	mu     sync.Mutex
	spawns int
}

func (m *chainModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	w.Usage(runtime.Usage{Input: 10, Output: 2, Total: 12})
	last := req.History[len(req.History)-1]
	switch {
	case last.Kind == runtime.ItemUser && strings.Contains(last.Text, "Summarise the conversation"):
		w.Text("SUMMARY: a chain of threads, each waiting for the next.")
	case last.Kind == runtime.ItemUser && isChainStart(last.Text):
		k := 0
		if i := strings.Index(last.Text, levelMark); i >= 0 {
			fmt.Sscanf(last.Text[i+len(levelMark)-len("level "):], "level %d", &k)
		}
		if k >= m.levels {
			w.Text("The deepest level waits.")
			return nil
		}
		m.mu.Lock()
		m.spawns++
		m.mu.Unlock()
		child, err := json.Marshal(map[string]any{"instructions": fmt.Sprintf("level %d: spawn the next level", k+1), "child_of": m.stack(req.ThreadID)})
		if err != nil {
			return err
		}
		w.ToolCall("", "spawn_thread", string(child))
	default:
		w.Text("Waiting.")
	}
	return nil
}

// levelMark is how a chain level's instructions appear in its first item.
const levelMark = "with these instructions:\n\nlevel "

// isChainStart reports whether text is a chain thread's first item.
func isChainStart(text string) bool {
	return text == "build the chain" || strings.Contains(text, levelMark)
}

// loadedAncestors counts the ancestors whose items a slice load of
// thread holds (each ancestor's first user item is "build the chain" or
// "level k: ..."), and reports whether the load starts with a summary.
func loadedAncestors(t *testing.T, h *HistoryStore, thread string) (n int, summary bool) {
	t.Helper()
	th, leaser, err := runtime.LoadForSlice(context.Background(), h, thread)
	if err != nil {
		t.Fatal(err)
	}
	if leaser != nil {
		defer leaser.Release(thread, th.Lease)
	}
	for _, it := range th.Items[:th.Inherited] {
		if it.Kind == runtime.ItemUser && isChainStart(it.Text) {
			n++
		}
	}
	for _, it := range th.Items {
		summary = summary || it.Kind == runtime.ItemSummary
	}
	return n, summary
}

// Limits.MaxInheritedDepth bounds the inherited-view chain: a thread
// whose view reaches more uncompacted ancestors than the limit is folded
// into one summary (it compacts, here without any compaction policy or
// token pressure), so that its slice load holds no ancestor's items;
// threads within the limit are not compacted. Without the folding, the
// deepest thread's load holds every ancestor.
func TestInheritedDepthIsFolded(t *testing.T) {
	const levels, limit = 5, 2
	cm := &chainModel{levels: levels}
	sc := newScenario(t, cm, func(c *Config) { c.Limits.MaxInheritedDepth = limit })
	cm.stack = func(id string) []string { return sc.state(id).Stack }
	sc.send(user("main", "u1", "build the chain"))
	sc.wait()
	if cm.spawns != levels {
		t.Fatalf("%d spawns, want %d\n%s", cm.spawns, levels, sc.render(true))
	}
	// The chain, root first.
	chain := []string{"main"}
	for len(chain) <= levels {
		st := sc.state(chain[len(chain)-1])
		if len(st.Children) == 0 {
			t.Fatalf("thread %s (level %d) has no child\n%s", chain[len(chain)-1], len(chain)-1, sc.render(true))
		}
		var next string
		for _, c := range st.Children {
			if !strings.HasPrefix(c, "cmp_") {
				next = c
			}
		}
		chain = append(chain, next)
	}
	deepest := chain[levels]
	// A later slice of the deepest thread (a message from its parent).
	sc.send(runtime.Message{V: 1, ID: "pm-1", ThreadID: deepest, Kind: runtime.KindParent, From: chain[levels-1], Text: "report"})
	sc.wait()
	if dl, _ := sc.sys.DeadLetters(); len(dl) > 0 {
		t.Fatalf("dead letter: %+v", dl[0])
	}
	for level, id := range chain {
		st := sc.state(id)
		n, summary := loadedAncestors(t, sc.store, id)
		if n > limit {
			t.Errorf("level %d (reach %d): a slice loads %d ancestors, above the limit of %d", level, st.Reach, n, limit)
		}
		if folded := st.Reach > limit; folded != summary || (folded && n != 0) {
			t.Errorf("level %d (reach %d): summary %v, %d ancestors loaded; want folded %v", level, st.Reach, summary, n, folded)
		}
		if level > 0 && st.Reach != level {
			t.Errorf("level %d: reach %d, want %d (no ancestor compacted before the spawn)", level, st.Reach, level)
		}
		if st.Compacting != "" || len(st.Subscriptions) != 0 || st.Closed {
			t.Errorf("level %d: compacting %q, subscriptions %d, closed %v", level, st.Compacting, len(st.Subscriptions), st.Closed)
		}
	}
	// What compaction keeps: the deepest thread's title, its spawn call.
	summaries := 0
	for _, it := range sc.history(chain[levels-1]) {
		if it.Kind == runtime.ItemSummary {
			summaries++
		}
		if it.Kind == runtime.ItemSummary && (!strings.Contains(it.Args, `"title":"You are child thread `+chain[levels-1]) ||
			!strings.Contains(it.Args, `"name":"spawn_thread"`)) {
			t.Errorf("the fold summary of level %d lost the title or the spawn call: %s", levels-1, it.Args)
		}
	}
	if summaries != 1 {
		t.Errorf("level %d: %d summaries, want 1 (one fold, no loop)", levels-1, summaries)
	}
	var answered bool
	for _, it := range sc.history(deepest) {
		answered = answered || (it.Kind == runtime.ItemAssistant && it.Text == "Waiting.")
	}
	if !answered {
		t.Fatalf("the deepest thread did not answer its parent after the fold\n%s", sc.render(true))
	}
}
