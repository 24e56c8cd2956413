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

// LiveViewStore keeps what a Receiver with ReceiverConfig.LiveViews needs
// between callbacks: the latest live view per (thread, call, view type),
// and a mark per call whose result opened a subscription (so that a view
// that follows the result at once is live before the thread has folded
// it). serve keeps it in memory (NewMemoryLiveViews, the default); on AWS,
// where each callback may reach another execution environment, it is a
// DynamoDB table (dedup.LiveViews). Every method is safe for concurrent
// use; an error is transient.
type LiveViewStore interface {
	// PutView keeps v as its call's latest view of its type, unless a
	// view of the same call and type that arrived later is kept.
	PutView(ctx context.Context, thread string, v LiveView) error
	// Views returns every kept view of the thread, one per (call, view
	// type), in no order.
	Views(ctx context.Context, thread string) ([]LiveView, error)
	// ForgetCall forgets every view of one call.
	ForgetCall(ctx context.Context, thread, call string) error
	// DropViews forgets the given views, each unless a newer one of its
	// call and type replaced it.
	DropViews(ctx context.Context, thread string, sent []LiveView) error
	// MarkStarted, Started and ClearStarted keep the marks of calls whose
	// result opened a subscription.
	MarkStarted(ctx context.Context, thread, call string) error
	Started(ctx context.Context, thread, call string) (bool, error)
	ClearStarted(ctx context.Context, thread, call string) error
}

// NewMemoryLiveViews returns the in-memory LiveViewStore: the views of at
// most max threads and the marks of at most max calls, the least recently
// updated first out.
func NewMemoryLiveViews(max int) LiveViewStore {
	return &memoryLiveViews{m: newBoundedMap[map[string]LiveView](max), started: newBoundedMap[bool](max)}
}

type memoryLiveViews struct {
	mu      sync.Mutex
	m       *boundedMap[map[string]LiveView] // thread → call \x00 view type → view
	started *boundedMap[bool]                // storeKey(thread, call)
}

func (l *memoryLiveViews) PutView(_ context.Context, thread string, v LiveView) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	views, _ := l.m.get(thread)
	if views == nil {
		views = map[string]LiveView{}
	}
	k := v.CallID + "\x00" + v.ViewType
	if cur, ok := views[k]; ok && cur.At > v.At {
		return nil
	}
	views[k] = v
	l.m.put(thread, views)
	return nil
}

func (l *memoryLiveViews) Views(_ context.Context, thread string) ([]LiveView, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	views, _ := l.m.get(thread)
	out := make([]LiveView, 0, len(views))
	for _, v := range views {
		out = append(out, v)
	}
	return out, nil
}

func (l *memoryLiveViews) ForgetCall(_ context.Context, thread, call string) error {
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
	return nil
}

func (l *memoryLiveViews) DropViews(_ context.Context, thread string, sent []LiveView) error {
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
	return nil
}

func (l *memoryLiveViews) MarkStarted(_ context.Context, thread, call string) error {
	l.started.put(storeKey(thread, call), true)
	return nil
}

func (l *memoryLiveViews) Started(_ context.Context, thread, call string) (bool, error) {
	_, ok := l.started.get(storeKey(thread, call))
	return ok, nil
}

func (l *memoryLiveViews) ClearStarted(_ context.Context, thread, call string) error {
	l.started.take(storeKey(thread, call))
	return nil
}

// latestByType returns, of views, the latest per view type (the later
// call on a tie), sorted by view type.
func latestByType(views []LiveView) []LiveView {
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

// ofCall returns, of views, those of one call, sorted by view type.
func ofCall(views []LiveView, call string) []LiveView {
	var out []LiveView
	for _, v := range views {
		if v.CallID == call {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ViewType < out[j].ViewType })
	return out
}

// LiveViews returns the thread's views kept out of history (their calls
// still going on), the latest per view type, sorted by view type; nil
// without ReceiverConfig.LiveViews or when the store cannot be read (a
// display, not a record: the failure is logged). The views of a call
// that ended without a last callback (a cancelled subscription, a stopped
// thread) are forgotten here, not shown.
func (rc *Receiver) LiveViews(ctx context.Context, threadID string) []LiveView {
	if rc == nil || rc.live == nil {
		return nil
	}
	views, err := rc.live.Views(ctx, threadID)
	if err != nil {
		rc.cfg.Logger.WarnContext(ctx, "rap: live views not read", "thread", threadID, "error", err)
		return nil
	}
	kept := views[:0:0]
	forgotten := map[string]bool{}
	for _, v := range views {
		if _, done := forgotten[v.CallID]; !done {
			live, err := rc.held(ctx, threadID, v.CallID)
			forgotten[v.CallID] = err == nil && !live
			if forgotten[v.CallID] {
				if err := rc.live.ForgetCall(ctx, threadID, v.CallID); err != nil {
					rc.cfg.Logger.WarnContext(ctx, "rap: a live view of an ended call not forgotten", "thread", threadID, "call", v.CallID, "error", err)
				}
			}
		}
		if !forgotten[v.CallID] {
			kept = append(kept, v)
		}
	}
	return latestByType(kept)
}

// held reports whether a call goes on in the background: LiveCalls says
// so, or its result opened a subscription the thread has not folded yet
// (a mark LiveCalls' yes clears, so that a cancelled call is not held by
// it for ever).
func (rc *Receiver) held(ctx context.Context, thread, call string) (bool, error) {
	live, err := rc.cfg.LiveViews.Live(ctx, thread, call)
	if err != nil {
		return false, err
	}
	if live {
		if err := rc.live.ClearStarted(ctx, thread, call); err != nil {
			rc.cfg.Logger.WarnContext(ctx, "rap: a started mark not cleared", "thread", thread, "call", call, "error", err)
		}
		return true, nil
	}
	return rc.live.Started(ctx, thread, call)
}

// liveView handles a view_update with LiveViews: a view of a call that
// goes on in the background is kept (the latest per call and view type) and
// told to ViewOutput, and nothing is enqueued; handled reports false for
// a view of a call that is over, or whose state cannot be read or kept
// now: such a view goes to history like any view, so none is lost.
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
	if err := rc.live.PutView(ctx, capa.ThreadID, lv); err != nil {
		rc.cfg.Logger.InfoContext(ctx, "rap: a live view cannot be kept; it goes to history", "thread", capa.ThreadID,
			"call", capa.CallID, "error", err)
		return false, nil
	}
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
// forgets it. A mark that cannot be written makes the call's next views
// go to history (each a slice, as without LiveViews), never lost.
func (rc *Receiver) accepted(ctx context.Context, capa Capability, cb *Callback) {
	var err error
	switch {
	case cb.Type == TypeToolResult && cb.ToolResult.Subscription:
		err = rc.live.MarkStarted(ctx, capa.ThreadID, capa.CallID)
	case ends(cb):
		err = rc.live.ClearStarted(ctx, capa.ThreadID, capa.CallID)
	}
	if err != nil {
		rc.cfg.Logger.WarnContext(ctx, "rap: a call's started mark not updated", "thread", capa.ThreadID, "call", capa.CallID, "error", err)
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
// are forgotten once enqueued (dropLiveViews); a failure to read or
// enqueue keeps them and is transient (the tool retries the callback, and
// with it the flush; the messages' IDs are the same).
func (rc *Receiver) flushLiveViews(ctx context.Context, capa Capability) ([]LiveView, error) {
	all, err := rc.live.Views(ctx, capa.ThreadID)
	if err != nil {
		return nil, fmt.Errorf("rap: reading the live views of call %s of thread %s: %w", capa.CallID, capa.ThreadID, err)
	}
	views := ofCall(all, capa.CallID)
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

// dropLiveViews forgets the flushed views once the call's end is
// enqueued. A failure leaves them until the call is found ended
// (LiveViews) or, on DynamoDB, their expiry: they are in history already.
func (rc *Receiver) dropLiveViews(ctx context.Context, capa Capability, flushed []LiveView) {
	if len(flushed) == 0 {
		return
	}
	if err := rc.live.DropViews(ctx, capa.ThreadID, flushed); err != nil {
		rc.cfg.Logger.WarnContext(ctx, "rap: flushed live views not dropped", "thread", capa.ThreadID, "call", capa.CallID, "error", err)
	}
}
