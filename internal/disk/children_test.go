package disk

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// childrenCommit commits one item to id at expected, with children as its
// state's list of children.
func childrenCommit(t *testing.T, h *History, id string, expected int64, children []string) {
	t.Helper()
	c := &runtime.Commit{ThreadID: id, Expected: expected,
		Append: []runtime.Item{{Kind: runtime.ItemUser, Input: fmt.Sprintf("%s-%d", id, expected), Text: "turn"}},
		State: runtime.ThreadState{Version: expected + 1, Length: int(expected) + 1, Stack: []string{id},
			Children: slices.Clone(children)}}
	if err := h.Commit(context.Background(), c); err != nil {
		t.Fatalf("commit %s@%d: %v", id, expected, err)
	}
}

func kids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("orchestrator/child-%04d", i)
	}
	return out
}

// TestCommitRecordsDoNotGrowWithChildren: a thread's list of children grows
// with its age (one per spawn and per compaction), and every commit's
// journal record carried it whole, so a slice's journal write, and its
// CPU, grew with the thread's age (issue 31, loadtest/longrun on the
// durable store: 2.6 KB a slice at turn 1,000, 13 KB at 10,000). A record
// now lists only the children its commit added.
func TestCommitRecordsDoNotGrowWithChildren(t *testing.T) {
	d := open(t, t.TempDir())
	h := d.History()
	all := kids(400)
	childrenCommit(t, h, "old", 0, all[:399])
	before := d.JournalStats().Bytes
	childrenCommit(t, h, "old", 1, all) // one more child
	grew := d.JournalStats().Bytes - before
	childrenCommit(t, h, "young", 0, nil)
	before = d.JournalStats().Bytes
	childrenCommit(t, h, "young", 1, all[:1])
	young := d.JournalStats().Bytes - before
	if grew > young+16 {
		t.Fatalf("a commit adding one child to a thread with 399 wrote %d journal bytes, one adding it to a thread with none %d: the record grows with the children", grew, young)
	}
}

// TestReplayRebuildsTheChildren: records that leave out the children
// their thread already had replay into the whole list, after a checkpoint
// (the previous state is the database's) or not (the previous record's),
// and a list that is not an extension of the previous one is written whole.
func TestReplayRebuildsTheChildren(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	h := d.History()
	all := kids(30)
	childrenCommit(t, h, "a", 0, all[:5])
	childrenCommit(t, h, "a", 1, all[:10])
	childrenCommit(t, h, "c", 0, all[:3])
	if n := h.FreezeIdle(-1); n != 2 {
		t.Fatalf("FreezeIdle dropped %d threads, want 2", n)
	}
	childrenCommit(t, h, "c", 1, all[:4])  // read back from the database, then journaled
	childrenCommit(t, h, "a", 2, all[:12]) // keeps the database's 10
	childrenCommit(t, h, "a", 3, all[:12]) // keeps them all, adds none
	childrenCommit(t, h, "a", 4, all[:20]) // keeps the previous record's 12
	childrenCommit(t, h, "b", 0, all[:8])
	childrenCommit(t, h, "b", 1, all[2:9]) // not an extension: whole
	childrenCommit(t, h, "b", 2, all[2:11])
	want := map[string][]string{"a": all[:20], "b": all[2:11], "c": all[:4]}
	kill(t, d)

	d = open(t, dir)
	for id, w := range want {
		th, err := d.History().Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(th.State.Children, w) {
			t.Fatalf("%s after the replay: children %q, want %q", id, th.State.Children, w)
		}
	}
}

// BenchmarkCommitOfAThreadWithChildren: one commit of one item to a
// thread with n children (journal without fsync): its cost should not
// depend on n.
func BenchmarkCommitOfAThreadWithChildren(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprint("children=", n), func(b *testing.B) {
			d, err := Open(context.Background(), b.TempDir(), Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			h, all := d.History(), kids(n)
			st := runtime.ThreadState{Stack: []string{"t"}, Children: all}
			it := []runtime.Item{{Kind: runtime.ItemUser, Text: "turn"}}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				st.Version, st.Length = int64(i+1), i+1
				if err := h.Commit(context.Background(), &runtime.Commit{ThreadID: "t", Expected: int64(i), Append: it, State: st}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(d.JournalStats().Bytes)/float64(d.JournalStats().Records), "journal_B/commit")
		})
	}
}
