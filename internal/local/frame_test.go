package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Thawing threads leaves holes in the arena; compaction must keep the bytes
// held close to the bytes live, and every thread must still load exactly.
func TestArenaCompactionKeepsHistoriesExact(t *testing.T) {
	ctx := context.Background()
	s := NewHistoryStore()
	s.arena = newArena(16 << 10) // small slabs so a few threads fill many
	const n = 60
	want := map[string][]runtime.Item{}
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		items := []runtime.Item{{Kind: runtime.ItemUser, Input: "u", Text: noise(i, 6000)}}
		if err := s.Commit(ctx, &runtime.Commit{ThreadID: id, Expected: 0, Append: items,
			State: runtime.ThreadState{Version: 1, Length: 1, Stack: []string{id}}}); err != nil {
			t.Fatal(err)
		}
		want[id] = items
	}
	s.FreezeIdle(-1)
	// Thaw two threads in three by writing to them, then freeze again.
	for i := 0; i < n; i++ {
		if i%3 == 2 {
			continue
		}
		id := fmt.Sprintf("t%02d", i)
		more := runtime.Item{Kind: runtime.ItemAssistant, Text: "ok " + id}
		if err := s.Commit(ctx, &runtime.Commit{ThreadID: id, Expected: 1, Append: []runtime.Item{more},
			State: runtime.ThreadState{Version: 2, Length: 2, Stack: []string{id}}}); err != nil {
			t.Fatal(err)
		}
		want[id] = append(want[id], more)
	}
	s.FreezeIdle(-1)
	st := s.Stats()
	if st.Hot != 0 {
		t.Fatalf("%d threads still hot", st.Hot)
	}
	if st.ArenaHeld > st.ColdBytes+3*(16<<10) {
		t.Fatalf("arena holds %d bytes for %d live bytes after compaction", st.ArenaHeld, st.ColdBytes)
	}
	for id, items := range want {
		th, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(th.Items) != len(items) || th.Items[0].Text != items[0].Text || th.Items[len(items)-1].Text != items[len(items)-1].Text {
			t.Fatalf("%s reloaded wrong", id)
		}
	}
}

// noise returns n hex characters that do not compress much.
func noise(seed, n int) string {
	r := rand.New(rand.NewPCG(uint64(seed), 1))
	const hex = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = hex[r.IntN(16)]
	}
	return string(b)
}
