package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

func reply(thread, id string) runtime.OutputEvent {
	return runtime.OutputEvent{ID: id, ThreadID: thread, Kind: "reply", Text: "text of " + id}
}

func TestBroadcasterRoutesByThread(t *testing.T) {
	t.Parallel()
	b := NewBroadcaster(8, quietLogger())
	a, _ := b.Subscribe("a")
	all, _ := b.Subscribe("")
	ctx := context.Background()
	_ = b.Publish(ctx, reply("a", "1"))
	_ = b.Publish(ctx, reply("b", "2"))
	if ev := <-a.Events(); ev.ID != "1" {
		t.Fatalf("thread a got %+v", ev)
	}
	if len(a.Events()) != 0 {
		t.Fatal("thread a got another thread's event")
	}
	if got := []string{(<-all.Events()).ID, (<-all.Events()).ID}; got[0] != "1" || got[1] != "2" {
		t.Fatalf("the every-thread subscriber got %v", got)
	}
	b.Close()
	if _, ok := <-a.Events(); ok {
		t.Fatal("Close left a subscription open")
	}
	if _, err := b.Subscribe("a"); err != ErrBroadcasterClosed {
		t.Fatalf("Subscribe after Close = %v", err)
	}
	b.Close()
	b.Unsubscribe(a) // after Close: a no-op
}

// TestBroadcasterLeavesViewsToHistory: the engine's "view" output event
// (meant for a deployment's output queue) is not passed on: serve's
// streams tell a view from history, once, with its item's time.
func TestBroadcasterLeavesViewsToHistory(t *testing.T) {
	t.Parallel()
	b := NewBroadcaster(8, quietLogger())
	a, _ := b.Subscribe("a")
	ctx := context.Background()
	_ = b.Publish(ctx, runtime.OutputEvent{ID: "v", ThreadID: "a", Kind: "view", Text: `{"view_type":"x","content":{}}`})
	_ = b.Publish(ctx, reply("a", "1"))
	if ev := <-a.Events(); ev.ID != "1" {
		t.Fatalf("thread a got %+v first, want the reply (no view from the output)", ev)
	}
}

// TestBroadcasterDropsSlowSubscriber: a subscriber that does not read is
// dropped once its buffer is full; Publish never blocks, and the other
// subscribers keep getting events.
func TestBroadcasterDropsSlowSubscriber(t *testing.T) {
	t.Parallel()
	b := NewBroadcaster(2, quietLogger())
	slow, _ := b.Subscribe("t")
	fast, _ := b.Subscribe("t")
	ctx := context.Background()
	for i := range 5 {
		_ = b.Publish(ctx, reply("t", string(rune('a'+i))))
		<-fast.Events()
	}
	if !b.Dropped(slow) || b.Dropped(fast) || b.DroppedCount() != 1 {
		t.Fatalf("dropped: slow %v, fast %v, count %d", b.Dropped(slow), b.Dropped(fast), b.DroppedCount())
	}
	var got []string
	for ev := range slow.Events() { // buffered events, then closed
		got = append(got, ev.ID)
	}
	if strings.Join(got, "") != "ab" {
		t.Fatalf("the slow subscriber kept %v, want its two buffered events", got)
	}
	if n, _ := b.Subscribers(); n != 1 {
		t.Fatalf("%d subscribers, want 1", n)
	}
	b.Unsubscribe(slow) // after a drop: a no-op
	b.Unsubscribe(fast)
	if n, _ := b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers, want 0", n)
	}
}

// blockingWriter is a ResponseWriter whose writes wait for release after
// the first event, standing in for a client that stopped reading.
type blockingWriter struct {
	header  http.Header
	mu      sync.Mutex
	buf     strings.Builder
	events  int
	blocked chan struct{} // closed when a write starts blocking
	release chan struct{}
	once    sync.Once
}

func (w *blockingWriter) Header() http.Header { return w.header }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Flush()              {}
func (w *blockingWriter) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), "event: ") {
		w.mu.Lock()
		w.events++
		first := w.events == 1
		w.mu.Unlock()
		if first {
			w.once.Do(func() { close(w.blocked) })
			<-w.release
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// TestStreamTellsDroppedClient: a stream whose client falls behind ends
// with an "event: dropped" telling it to reconnect.
func TestStreamTellsDroppedClient(t *testing.T) {
	t.Parallel()
	b := NewBroadcaster(1, quietLogger())
	w := &blockingWriter{header: http.Header{}, blocked: make(chan struct{}), release: make(chan struct{})}
	r := httptest.NewRequest(http.MethodGet, "/threads/t/events", nil)
	done := make(chan struct{})
	go func() { // owned by this test: waited for below
		defer close(done)
		srv := &Server{events: b, set: &settings{keepAlive: time.Hour}}
		srv.serveEvents(w, r, "") // every thread's stream: no history to replay
	}()
	for { // wait for the handler's subscription
		n, changed := b.Subscribers()
		if n == 1 {
			break
		}
		<-changed
	}
	ctx := context.Background()
	_ = b.Publish(ctx, reply("t", "1")) // taken by the handler, whose write blocks
	<-w.blocked
	_ = b.Publish(ctx, reply("t", "2")) // fills the buffer
	_ = b.Publish(ctx, reply("t", "3")) // overflows it: dropped
	close(w.release)
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatal("the stream did not end after its subscriber was dropped")
	}
	out := w.buf.String()
	if !strings.Contains(out, "event: reply\ndata: {\"id\":\"1\"") || !strings.Contains(out, `{"id":"2"`) || strings.Contains(out, `{"id":"3"`) ||
		!strings.HasSuffix(out, "event: dropped\ndata: {\"error\":\"this stream fell behind and was dropped; reconnect with Last-Event-ID to get what was missed\"}\n\n") {
		t.Fatalf("stream:\n%s", out)
	}
	if n, _ := b.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers left", n)
	}
}
