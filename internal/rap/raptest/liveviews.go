package raptest

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"testing"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// RunLiveViewStore checks a rap.LiveViewStore's contract: the latest view
// per (thread, call, view type) is kept and a late older one does not
// replace it; ForgetCall and DropViews remove exactly what they name
// (DropViews not a view replaced since); threads do not see each other's
// views; started marks are set, read and cleared. newStore returns an
// empty store.
func RunLiveViewStore(t *testing.T, newStore func(t *testing.T) rap.LiveViewStore) {
	ctx := context.Background()
	view := func(call, vt, content string, at runtime.Stamp) rap.LiveView {
		return rap.LiveView{CallID: call, ViewType: vt, Content: json.RawMessage(content), At: at}
	}
	views := func(t *testing.T, s rap.LiveViewStore, thread string) []string {
		t.Helper()
		vs, err := s.Views(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = v.CallID + "/" + v.ViewType + "=" + string(v.Content)
		}
		sort.Strings(out)
		return out
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	same := func(t *testing.T, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Fatalf("views %q, want %q", got, want)
		}
	}

	t.Run("LatestPerCallAndType", func(t *testing.T) {
		s := newStore(t)
		same(t, views(t, s, "thr_a"))
		must(t, s.PutView(ctx, "thr_a", view("call_1", "log", `{"n":1}`, 10)))
		must(t, s.PutView(ctx, "thr_a", view("call_1", "log", `{"n":2}`, 20)))
		must(t, s.PutView(ctx, "thr_a", view("call_1", "log", `{"n":0}`, 5))) // late, older: not kept
		must(t, s.PutView(ctx, "thr_a", view("call_1", "status bar", `"ok"`, 21)))
		must(t, s.PutView(ctx, "thr_a", view("call_2", "log", `{"m":1}`, 30)))
		must(t, s.PutView(ctx, "thr_b", view("call_1", "log", `{"b":1}`, 40)))
		same(t, views(t, s, "thr_a"), `call_1/log={"n":2}`, `call_1/status bar="ok"`, `call_2/log={"m":1}`)
		same(t, views(t, s, "thr_b"), `call_1/log={"b":1}`)
		vs, err := s.Views(ctx, "thr_b")
		must(t, err)
		if vs[0].At != 40 {
			t.Fatalf("a kept view's arrival %d, want 40", vs[0].At)
		}
	})
	t.Run("ForgetCall", func(t *testing.T) {
		s := newStore(t)
		must(t, s.PutView(ctx, "thr_a", view("call_1", "log", `1`, 10)))
		must(t, s.PutView(ctx, "thr_a", view("call_1", "status", `2`, 11)))
		must(t, s.PutView(ctx, "thr_a", view("call_2", "log", `3`, 12)))
		must(t, s.PutView(ctx, "thr_b", view("call_1", "log", `4`, 13)))
		must(t, s.ForgetCall(ctx, "thr_a", "call_1"))
		same(t, views(t, s, "thr_a"), `call_2/log=3`)
		same(t, views(t, s, "thr_b"), `call_1/log=4`)
		must(t, s.ForgetCall(ctx, "thr_a", "call_9")) // nothing to forget
		// A forgotten call's views can come back.
		must(t, s.PutView(ctx, "thr_a", view("call_1", "log", `5`, 14)))
		same(t, views(t, s, "thr_a"), `call_1/log=5`, `call_2/log=3`)
	})
	t.Run("DropKeepsAReplacedView", func(t *testing.T) {
		s := newStore(t)
		a, b := view("call_1", "log", `1`, 10), view("call_1", "status", `2`, 11)
		must(t, s.PutView(ctx, "thr_a", a))
		must(t, s.PutView(ctx, "thr_a", b))
		must(t, s.PutView(ctx, "thr_a", view("call_1", "status", `3`, 12))) // replaces b after it was read
		must(t, s.DropViews(ctx, "thr_a", []rap.LiveView{a, b}))
		same(t, views(t, s, "thr_a"), `call_1/status=3`)
		must(t, s.DropViews(ctx, "thr_a", []rap.LiveView{view("call_1", "status", `3`, 12)}))
		same(t, views(t, s, "thr_a"))
	})
	t.Run("StartedMarks", func(t *testing.T) {
		s := newStore(t)
		started := func(thread, call string) bool {
			t.Helper()
			ok, err := s.Started(ctx, thread, call)
			must(t, err)
			return ok
		}
		if started("thr_a", "call_1") {
			t.Fatal("an unmarked call is started")
		}
		must(t, s.MarkStarted(ctx, "thr_a", "call_1"))
		must(t, s.MarkStarted(ctx, "thr_a", "call_1")) // again: no error
		if !started("thr_a", "call_1") || started("thr_a", "call_2") || started("thr_b", "call_1") {
			t.Fatal("the mark is not exactly on (thr_a, call_1)")
		}
		must(t, s.ClearStarted(ctx, "thr_a", "call_1"))
		must(t, s.ClearStarted(ctx, "thr_a", "call_1")) // again: no error
		if started("thr_a", "call_1") {
			t.Fatal("a cleared mark is still there")
		}
	})
}
