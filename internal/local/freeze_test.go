package local

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// freezing freezes every thread after each commit.
type freezing struct{ *HistoryStore }

func (f freezing) Commit(ctx context.Context, c *runtime.Commit) error {
	err := f.HistoryStore.Commit(ctx, c)
	f.FreezeIdle(-1)
	return err
}

// Threads frozen before the store has learned its dictionary and threads
// frozen after it both thaw to exactly what was committed, and the
// dictionary is learned from the store's own histories.
func TestFreezeLearnsDictionary(t *testing.T) {
	ctx := context.Background()
	s := NewHistoryStore()
	words := strings.Fields("the workspace build finished three crates were rebuilt and test plan covers each module failures storage parser network retries")
	text := func(th, i int) string {
		var b strings.Builder
		for k := range 60 {
			b.WriteString(words[(th*7+i*13+k*k)%len(words)])
			b.WriteByte(' ')
		}
		return b.String()
	}
	const threads, items = 40, 12
	want := map[string][]runtime.Item{}
	for th := range threads {
		id := fmt.Sprintf("t%02d", th)
		var its []runtime.Item
		for i := range items {
			its = append(its, runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("u%d", i), Text: text(th, i)})
		}
		if err := s.Commit(ctx, &runtime.Commit{ThreadID: id, Expected: 0, Append: its,
			State: runtime.ThreadState{Version: 1, Length: items, Stack: []string{id}}}); err != nil {
			t.Fatal(err)
		}
		want[id] = its
		if s.FreezeIdle(-1) != 1 {
			t.Fatalf("thread %s not frozen", id)
		}
	}
	if !s.codec.learned.Load() {
		t.Fatalf("no dictionary after %d frozen threads of about %d bytes", threads, items*len(text(0, 0)))
	}
	for id, its := range want {
		got, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Items, its) {
			t.Fatalf("%s thawed to %d items, differing from the %d committed", id, len(got.Items), len(its))
		}
	}
}

// A closed child is archived by the next freeze pass however recently it
// committed (runtime.ThreadState.Archivable): compressed, off the hot
// path, and read back exactly; its open sibling and the parent, as
// recent, stay hot.
func TestFreezeArchivesClosedChildren(t *testing.T) {
	ctx := context.Background()
	s := NewHistoryStore()
	kid := func(id string) runtime.ChildThread {
		return runtime.ChildThread{ID: id, SpawnAt: 2, State: runtime.ThreadState{Parent: "p", Stack: []string{"p", id}}}
	}
	parent := []runtime.Item{{Kind: runtime.ItemUser, Input: "u1", Text: "split the work"}, {Kind: runtime.ItemAssistant, Text: "spawning"}}
	if err := s.Commit(ctx, &runtime.Commit{ThreadID: "p", Expected: 0, Append: parent, Children: []runtime.ChildThread{kid("done"), kid("open")},
		State: runtime.ThreadState{Version: 1, Length: 2, Stack: []string{"p"}}}); err != nil {
		t.Fatal(err)
	}
	own := []runtime.Item{{Kind: runtime.ItemUser, Input: "start", Text: "your part"}, {Kind: runtime.ItemAssistant, Text: "done it"}}
	for _, id := range []string{"done", "open"} {
		if err := s.Commit(ctx, &runtime.Commit{ThreadID: id, Expected: 0, Append: own,
			State: runtime.ThreadState{Version: 1, Length: 2, Parent: "p", Stack: []string{"p", id}, Closed: id == "done"}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.FreezeIdle(time.Hour); n != 1 {
		t.Fatalf("a freeze pass of threads idle for an hour froze %d, want the closed child alone", n)
	}
	if st := s.Stats(); st.Hot != 2 || st.ColdBytes == 0 {
		t.Fatalf("after the pass: %d hot, %d cold bytes; want the parent and the open child hot, the closed one cold", st.Hot, st.ColdBytes)
	}
	th, err := s.Load(ctx, "done")
	if err != nil {
		t.Fatal(err)
	}
	if !th.State.Closed || !reflect.DeepEqual(th.Own(), own) || th.Inherited != 2 {
		t.Fatalf("the archived child reads back as %+v", th)
	}
}
