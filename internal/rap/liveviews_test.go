package rap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// liveSet is a LiveCalls over a set of live (thread, call) pairs.
type liveSet struct {
	mu   sync.Mutex
	live map[string]bool
	err  error
}

func (l *liveSet) Live(_ context.Context, thread, call string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.live[thread+"/"+call], l.err
}

func (l *liveSet) set(thread, call string, live bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live[thread+"/"+call] = live
}

func viewBody(thread, viewType, content string) string {
	return fmt.Sprintf(`{"type":"view_update","group_id":%q,"view_type":%q,"content":%s}`, thread, viewType, content)
}

// TestReceiverLiveViews: with LiveViews, a view of a call that goes on
// in the background enqueues nothing (no message: no slice, no history
// item) and is told to ViewOutput and kept (the latest per view type); the
// callback that ends the call is preceded by the call's last view of each
// type, once; a view of a call that is over, or whose state cannot be
// read, goes to the thread as a KindView message as before.
func TestReceiverLiveViews(t *testing.T) {
	t.Parallel()
	live := &liveSet{live: map[string]bool{"thr_1/call_run": true}}
	out := &recordingOutput{}
	rig := newCallbackRig(t, func(c *ReceiverConfig) {
		c.HistoryViews, c.LiveViews, c.ViewOutput = true, live, out
	})
	run := rig.url(t, "thr_1", "call_run")
	for i := 1; i <= 5; i++ {
		if status, msg := post(t, run, viewBody("thr_1", "cmd", fmt.Sprintf(`{"n":%d}`, i))); status != http.StatusOK {
			t.Fatalf("view %d: %d %s", i, status, msg)
		}
	}
	if status, msg := post(t, run, viewBody("thr_1", "other", `{"x":1}`)); status != http.StatusOK {
		t.Fatalf("other view: %d %s", status, msg)
	}
	if n := rig.q.count(); n != 0 {
		t.Fatalf("%d messages enqueued for the views of a live call, want none", n)
	}
	if evs := out.events(); len(evs) != 6 || evs[4].Kind != "view" || evs[4].Text != `{"view_type":"cmd","content":{"n":5}}` {
		t.Fatalf("views told: %+v", evs)
	}
	lv := rig.rcv.LiveViews(context.Background(), "thr_1")
	if len(lv) != 2 || lv[0].ViewType != "cmd" || string(lv[0].Content) != `{"n":5}` || lv[0].CallID != "call_run" || lv[1].ViewType != "other" {
		t.Fatalf("live views: %+v", lv)
	}
	// The final event: the call's last views first, then the event.
	final := `{"type":"subscription_event","group_id":"thr_1","tool_call_id":"call_run","text":"done","associative":true,"final":true}`
	if status, msg := post(t, run, final); status != http.StatusOK {
		t.Fatalf("final event: %d %s", status, msg)
	}
	var got []string
	for i := 0; i < 3; i++ {
		m := rig.q.next(t)
		got = append(got, string(m.Kind)+":"+m.Text)
	}
	want := []string{`view:{"view_type":"cmd","content":{"n":5}}`, `view:{"view_type":"other","content":{"x":1}}`, "event:done"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("after the final event the queue has\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if lv := rig.rcv.LiveViews(context.Background(), "thr_1"); len(lv) != 0 {
		t.Fatalf("live views after the call ended: %+v", lv)
	}
	// A retried final event sends no view again.
	live.set("thr_1", "call_run", false)
	if status, _ := post(t, run, final); status != http.StatusOK || rig.q.next(t).Kind != runtime.KindEvent || rig.q.count() != 4 {
		t.Fatalf("a retried final event: %d, %d messages", status, rig.q.count())
	}
	// A view after its call ended goes to history at once.
	if status, _ := post(t, run, viewBody("thr_1", "cmd", `{"n":6}`)); status != http.StatusOK {
		t.Fatal(status)
	}
	if m := rig.q.next(t); m.Kind != runtime.KindView || m.Text != `{"view_type":"cmd","content":{"n":6}}` {
		t.Fatalf("a view of an ended call: %+v", m)
	}
	// So does one whose call's state cannot be read now.
	live.mu.Lock()
	live.err = errors.New("store down")
	live.mu.Unlock()
	if status, _ := post(t, rig.url(t, "thr_1", "call_x"), viewBody("thr_1", "cmd", `{"n":7}`)); status != http.StatusOK {
		t.Fatal(status)
	}
	if m := rig.q.next(t); m.Kind != runtime.KindView {
		t.Fatalf("a view whose call's state is unknown: %+v", m)
	}
}

// TestReceiverLiveViewsFlushIsRetried: when the call's last views cannot
// be enqueued, the ending callback answers 503 (the tool retries it) and
// the views are kept for the retry.
func TestReceiverLiveViewsFlushIsRetried(t *testing.T) {
	t.Parallel()
	live := &liveSet{live: map[string]bool{"thr_1/call_run": true}}
	rig := newCallbackRig(t, func(c *ReceiverConfig) { c.HistoryViews, c.LiveViews = true, live })
	run := rig.url(t, "thr_1", "call_run")
	if status, _ := post(t, run, viewBody("thr_1", "cmd", `{"n":1}`)); status != http.StatusOK {
		t.Fatal(status)
	}
	rig.q.mu.Lock()
	rig.q.err = errors.New("queue unreachable")
	rig.q.mu.Unlock()
	result := `{"type":"tool_result","group_id":"thr_1","id":"call_run","text":"ok"}`
	if status, _ := post(t, run, result); status != http.StatusServiceUnavailable {
		t.Fatalf("ending callback with the queue down: %d, want 503", status)
	}
	if lv := rig.rcv.LiveViews(context.Background(), "thr_1"); len(lv) != 1 {
		t.Fatalf("the live views after a failed flush: %+v", lv)
	}
	rig.q.mu.Lock()
	rig.q.err = nil
	rig.q.mu.Unlock()
	if status, _ := post(t, run, result); status != http.StatusOK {
		t.Fatalf("retried: %d", status)
	}
	if m := rig.q.next(t); m.Kind != runtime.KindView {
		t.Fatalf("first after the retry: %+v", m)
	}
	if m := rig.q.next(t); m.Kind != runtime.KindToolResult {
		t.Fatalf("then: %+v", m)
	}
}

// TestReceiverLiveViewsRightAfterTheStart: a view that follows the result
// opening its call's subscription is live even while the thread has not
// folded that result yet (LiveCalls still says no); the call's end
// forgets that.
func TestReceiverLiveViewsRightAfterTheStart(t *testing.T) {
	t.Parallel()
	live := &liveSet{live: map[string]bool{}} // the thread has not folded the "started" result
	rig := newCallbackRig(t, func(c *ReceiverConfig) { c.HistoryViews, c.LiveViews = true, live })
	run := rig.url(t, "thr_1", "call_run")
	if status, _ := post(t, run, `{"type":"tool_result","group_id":"thr_1","id":"call_run","text":"started","subscription":true}`); status != http.StatusOK {
		t.Fatal(status)
	}
	if m := rig.q.next(t); m.Kind != runtime.KindToolResult || !m.Subscription {
		t.Fatalf("the started result: %+v", m)
	}
	if status, _ := post(t, run, viewBody("thr_1", "cmd", `{"n":1}`)); status != http.StatusOK {
		t.Fatal(status)
	}
	if n := rig.q.count(); n != 1 {
		t.Fatalf("%d messages after a view right after the start, want the result only", n)
	}
	final := `{"type":"subscription_event","group_id":"thr_1","tool_call_id":"call_run","text":"done","associative":true,"final":true}`
	if status, _ := post(t, run, final); status != http.StatusOK {
		t.Fatal(status)
	}
	if m := rig.q.next(t); m.Kind != runtime.KindView {
		t.Fatalf("before the final event: %+v", m)
	}
	if m := rig.q.next(t); m.Kind != runtime.KindEvent {
		t.Fatalf("then: %+v", m)
	}
	if status, _ := post(t, run, viewBody("thr_1", "cmd", `{"n":2}`)); status != http.StatusOK || rig.q.next(t).Kind != runtime.KindView {
		t.Fatalf("a view after the end: %d, not to history", status)
	}
}

// TestReceiverForgetsTheViewsOfACancelledCall: a call whose subscription
// ended without a last callback (cancelled, its thread stopped) no longer
// shows its live views.
func TestReceiverForgetsTheViewsOfACancelledCall(t *testing.T) {
	t.Parallel()
	live := &liveSet{live: map[string]bool{}}
	rig := newCallbackRig(t, func(c *ReceiverConfig) { c.HistoryViews, c.LiveViews = true, live })
	run := rig.url(t, "thr_1", "call_run")
	if status, _ := post(t, run, `{"type":"tool_result","group_id":"thr_1","id":"call_run","text":"started","subscription":true}`); status != http.StatusOK {
		t.Fatal(status)
	}
	if status, _ := post(t, run, viewBody("thr_1", "cmd", `{"n":1}`)); status != http.StatusOK {
		t.Fatal(status)
	}
	ctx := context.Background()
	if lv := rig.rcv.LiveViews(ctx, "thr_1"); len(lv) != 1 {
		t.Fatalf("before the thread folded the start: %+v", lv)
	}
	live.set("thr_1", "call_run", true) // folded
	if status, _ := post(t, run, viewBody("thr_1", "cmd", `{"n":2}`)); status != http.StatusOK {
		t.Fatal(status)
	}
	if lv := rig.rcv.LiveViews(ctx, "thr_1"); len(lv) != 1 || string(lv[0].Content) != `{"n":2}` {
		t.Fatalf("while it runs: %+v", lv)
	}
	live.set("thr_1", "call_run", false) // cancel_subscription: no final event comes
	if lv := rig.rcv.LiveViews(ctx, "thr_1"); len(lv) != 0 {
		t.Fatalf("after the cancel: %+v", lv)
	}
	if n := rig.q.count(); n != 1 {
		t.Fatalf("%d messages, want the started result only", n)
	}
}

// failingLiveStore is a LiveViewStore that cannot keep views (DynamoDB
// down, a view too large for an item); everything else is memory.
type failingLiveStore struct{ LiveViewStore }

func (failingLiveStore) PutView(context.Context, string, LiveView) error {
	return errors.New("the view store is down")
}

// TestReceiverLiveViewStoreDownLosesNoView: a view of a live call that
// the store cannot keep goes to history like any view (a message), and
// the callback is accepted: display-only views are an optimisation, never
// a way to lose one.
func TestReceiverLiveViewStoreDownLosesNoView(t *testing.T) {
	t.Parallel()
	live := &liveSet{live: map[string]bool{"thr_1/call_run": true}}
	rig := newCallbackRig(t, func(c *ReceiverConfig) {
		c.HistoryViews, c.LiveViews, c.LiveStore = true, live, failingLiveStore{NewMemoryLiveViews(10)}
	})
	if status, msg := post(t, rig.url(t, "thr_1", "call_run"), viewBody("thr_1", "cmd", `{"n":1}`)); status != http.StatusOK {
		t.Fatalf("view: %d %s", status, msg)
	}
	if m := rig.q.next(t); m.Kind != runtime.KindView || m.Text != `{"view_type":"cmd","content":{"n":1}}` {
		t.Fatalf("a view the store could not keep: %+v, want it in history", m)
	}
}
