package rap

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// LiveCalls tells a Receiver whether a call still goes on in the
// background (serve: it holds an active subscription). With it a
// view_update of such a call is display only (ReceiverConfig.LiveViews).
type LiveCalls interface {
	Live(ctx context.Context, threadID, callID string) (bool, error)
}

// LiveView is a view kept out of history while its call goes on.
type LiveView struct {
	ViewType string
	Content  json.RawMessage
	CallID   string
	At       runtime.Stamp // when it arrived
}

// Text is the view as output events and view markers carry it:
// {"view_type", "content"}.
func (v LiveView) Text() string { return viewText(v.ViewType, v.Content) }

func viewText(viewType string, content json.RawMessage) string {
	js, _ := json.Marshal(struct {
		ViewType string          `json:"view_type"`
		Content  json.RawMessage `json:"content"`
	}{viewType, content}) // a string and valid JSON: cannot fail
	return string(js)
}

// liveViews holds the latest live view per (thread, call, view type), at
// most max threads (the least recently updated first out).
type liveViews struct {
	mu sync.Mutex
	m  *boundedMap[map[string]LiveView] // thread → call \x00 view type → view
	// started holds the calls whose result opened a subscription, as
	// accepted here: a view that follows it at once is live even before
	// the thread has folded the result (LiveCalls reads the thread).
	started *boundedMap[bool]
}

func newLiveViews(max int) *liveViews {
	return &liveViews{m: newBoundedMap[map[string]LiveView](max), started: newBoundedMap[bool](max)}
}

func (l *liveViews) put(thread string, v LiveView) {
	l.mu.Lock()
	defer l.mu.Unlock()
	views, _ := l.m.get(thread)
	if views == nil {
		views = map[string]LiveView{}
	}
	views[v.CallID+"\x00"+v.ViewType] = v
	l.m.put(thread, views)
}

// of returns the thread's live views, the latest per view type.
func (l *liveViews) of(thread string) []LiveView {
	l.mu.Lock()
	defer l.mu.Unlock()
	views, _ := l.m.get(thread)
	latest := map[string]LiveView{}
	for _, v := range views {
		if cur, ok := latest[v.ViewType]; !ok || v.At > cur.At || (v.At == cur.At && v.CallID > cur.CallID) {
			latest[v.ViewType] = v
		}
	}
	out := make([]LiveView, 0, len(latest))
	for _, v := range latest {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ViewType < out[j].ViewType })
	return out
}

// ofCall returns the latest views of one call, by view type.
func (l *liveViews) ofCall(thread, call string) []LiveView {
	l.mu.Lock()
	defer l.mu.Unlock()
	views, _ := l.m.get(thread)
	var out []LiveView
	for _, v := range views {
		if v.CallID == call {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ViewType < out[j].ViewType })
	return out
}

// calls returns one view of each call with live views on the thread.
func (l *liveViews) calls(thread string) []LiveView {
	l.mu.Lock()
	defer l.mu.Unlock()
	views, _ := l.m.get(thread)
	seen := map[string]bool{}
	var out []LiveView
	for _, v := range views {
		if !seen[v.CallID] {
			seen[v.CallID] = true
			out = append(out, v)
		}
	}
	return out
}

// forgetCall forgets every live view of one call.
func (l *liveViews) forgetCall(thread, call string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	views, _ := l.m.get(thread)
	for k, v := range views {
		if v.CallID == call {
			delete(views, k)
		}
	}
	if len(views) == 0 {
		l.m.take(thread)
	}
}

// drop forgets the views of one call, unless a newer one replaced them.
func (l *liveViews) drop(thread string, sent []LiveView) {
	l.mu.Lock()
	defer l.mu.Unlock()
	views, _ := l.m.get(thread)
	for _, v := range sent {
		k := v.CallID + "\x00" + v.ViewType
		if cur, ok := views[k]; ok && cur.At == v.At && string(cur.Content) == string(v.Content) {
			delete(views, k)
		}
	}
	if len(views) == 0 {
		l.m.take(thread)
	}
}

// LiveViews returns the thread's views kept out of history (their calls
// still going on), the latest per view type, sorted by view type; nil
// without ReceiverConfig.LiveViews. The views of a call that ended
// without a last callback (a cancelled subscription, a stopped thread)
// are forgotten here, not shown.
func (rc *Receiver) LiveViews(ctx context.Context, threadID string) []LiveView {
	if rc == nil || rc.live == nil {
		return nil
	}
	for _, v := range rc.live.calls(threadID) {
		if live, err := rc.held(ctx, threadID, v.CallID); err == nil && !live {
			rc.live.forgetCall(threadID, v.CallID)
		}
	}
	return rc.live.of(threadID)
}

// held reports whether a call goes on in the background: LiveCalls says
// so, or its result opened a subscription the thread has not folded yet
// (a mark LiveCalls' yes clears, so that a cancelled call is not held by
// it for ever).
func (rc *Receiver) held(ctx context.Context, thread, call string) (bool, error) {
	key := storeKey(thread, call)
	live, err := rc.cfg.LiveViews.Live(ctx, thread, call)
	if err != nil {
		return false, err
	}
	if live {
		rc.live.started.take(key)
		return true, nil
	}
	_, started := rc.live.started.get(key)
	return started, nil
}

// liveView handles a view_update with LiveViews: a view of a call that
// goes on in the background is kept (the latest per call and view type) and
// told to ViewOutput, and nothing is enqueued; handled reports false for
// a view of a call that is over (or whose state cannot be read now),
// which goes to history like any view.
func (rc *Receiver) liveView(ctx context.Context, capa Capability, v *ViewUpdate) (handled bool, err error) {
	live, err := rc.held(ctx, capa.ThreadID, capa.CallID)
	if err != nil {
		rc.cfg.Logger.InfoContext(ctx, "rap: cannot tell whether a view's call goes on; the view goes to history", "thread", capa.ThreadID,
			"call", capa.CallID, "error", err)
		return false, nil
	}
	if !live {
		return false, nil
	}
	lv := LiveView{ViewType: v.ViewType, Content: append(json.RawMessage(nil), v.Content...), CallID: capa.CallID,
		At: runtime.StampOf(rc.cfg.Now())}
	rc.live.put(capa.ThreadID, lv)
	if out := rc.viewOutput(); out != nil {
		ev := runtime.OutputEvent{ID: runtime.DeriveID("view_", capa.ThreadID, capa.CallID, v.ViewType, string(v.Content)),
			ThreadID: capa.ThreadID, Kind: "view", Text: lv.Text()}
		if err := out.Publish(ctx, ev); err != nil {
			rc.cfg.Logger.WarnContext(ctx, "rap: live view not forwarded (best effort)", "thread", capa.ThreadID, "view_type", v.ViewType, "error", err)
		}
	}
	return true, nil
}

func (rc *Receiver) viewOutput() runtime.Output {
	if rc.cfg.ViewOutput != nil {
		return rc.cfg.ViewOutput
	}
	return rc.cfg.Output
}

// accepted notes a callback the thread was given: a result that opens a
// subscription makes the call's views live at once; the end of a call
// forgets it.
func (rc *Receiver) accepted(capa Capability, cb *Callback) {
	key := storeKey(capa.ThreadID, capa.CallID)
	switch {
	case cb.Type == TypeToolResult && cb.ToolResult.Subscription:
		rc.live.started.put(key, true)
	case ends(cb):
		rc.live.started.take(key)
	}
}

// ends reports whether an accepted callback ends its call: a result that
// opens no subscription, or a subscription's final event.
func ends(cb *Callback) bool {
	switch cb.Type {
	case TypeToolResult:
		return !cb.ToolResult.Subscription
	case TypeSubscriptionEvent:
		return cb.SubscriptionEvent.Final
	}
	return false
}

// flushLiveViews sends the call's live views to the thread as KindView
// messages, right before the callback that ends the call, so that history
// keeps each view as the call left it (once, not once per update). They
// are forgotten once enqueued; a failure to enqueue keeps them and is
// transient (the tool retries the callback, and with it the flush).
func (rc *Receiver) flushLiveViews(ctx context.Context, capa Capability) ([]LiveView, error) {
	views := rc.live.ofCall(capa.ThreadID, capa.CallID)
	for _, v := range views {
		m := MessageFor(capa.ThreadID, capa.CallID, &Callback{Type: TypeViewUpdate,
			ViewUpdate: &ViewUpdate{Type: TypeViewUpdate, GroupID: capa.ThreadID, ViewType: v.ViewType, Content: v.Content}})
		m.Class, m.At, m.Trace = capa.Class, v.At, capa.Trace
		if err := rc.cfg.Queue.Send(ctx, m); err != nil && !runtime.IsPermanent(err) {
			return nil, fmt.Errorf("rap: enqueueing the last view %s of call %s of thread %s: %w", v.ViewType, capa.CallID, capa.ThreadID, err)
		}
	}
	return views, nil
}
