package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

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
	// Thaw five threads in six by writing to them; they stay hot, so the
	// slabs they were frozen in are left mostly empty.
	for i := 0; i < n; i++ {
		if i%6 == 5 {
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
	s.FreezeIdle(time.Hour) // freezes nothing new; compacts
	st := s.Stats()
	if st.Hot != n-n/6 {
		t.Fatalf("%d threads hot, want %d", st.Hot, n-n/6)
	}
	// After compaction every slab but the current one is at least half
	// live, whatever the order frames were written in.
	if limit := 2*st.ColdBytes + 16<<10; st.ArenaHeld > limit {
		t.Fatalf("arena holds %d bytes for %d live bytes after compaction (limit %d)", st.ArenaHeld, st.ColdBytes, limit)
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
