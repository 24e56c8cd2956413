package disk

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A closed child leaves memory at the next freeze pass however recently
// it committed (runtime.ThreadState.Archivable): its history becomes one
// compressed frame on disk and reads back exactly; the parent and an open
// sibling, as recent, stay in memory.
func TestFreezeArchivesClosedChildren(t *testing.T) {
	ctx := context.Background()
	h := open(t, t.TempDir()).History()
	kid := func(id string) runtime.ChildThread {
		return runtime.ChildThread{ID: id, SpawnAt: 2, State: runtime.ThreadState{Parent: "p", Stack: []string{"p", id}}}
	}
	parent := []runtime.Item{{Kind: runtime.ItemUser, Input: "u1", Text: "split the work"}, {Kind: runtime.ItemAssistant, Text: "spawning"}}
	if err := h.Commit(ctx, &runtime.Commit{ThreadID: "p", Expected: 0, Append: parent, Children: []runtime.ChildThread{kid("done"), kid("open")},
		State: runtime.ThreadState{Version: 1, Length: 2, Stack: []string{"p"}}}); err != nil {
		t.Fatal(err)
	}
	own := []runtime.Item{{Kind: runtime.ItemUser, Input: "start", Text: "your part"}, {Kind: runtime.ItemAssistant, Text: "done it"}}
	for _, id := range []string{"done", "open"} {
		if err := h.Commit(ctx, &runtime.Commit{ThreadID: id, Expected: 0, Append: own,
			State: runtime.ThreadState{Version: 1, Length: 2, Parent: "p", Stack: []string{"p", id}, Closed: id == "done"}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.FreezeIdle(time.Hour); n != 1 {
		t.Fatalf("a freeze pass of threads idle for an hour dropped %d, want the closed child alone", n)
	}
	if st := h.Stats(); st.Hot != 2 {
		t.Fatalf("after the pass %d threads in memory, want the parent and the open child", st.Hot)
	}
	th, err := h.Load(ctx, "done")
	if err != nil {
		t.Fatal(err)
	}
	if !th.State.Closed || !reflect.DeepEqual(th.Own(), own) || th.Inherited != 2 {
		t.Fatalf("the archived child reads back as %+v", th)
	}
}
