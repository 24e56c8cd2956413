package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// ErrBroadcasterClosed is returned by Subscribe after Close.
var ErrBroadcasterClosed = errors.New("server: event broadcaster closed (the server is stopping)")

// Broadcaster is the runtime.Output of the server: it hands each output
// event to the subscribers of its thread (and to those of every thread).
// Publish never blocks: each subscriber has a bounded buffer, and one that
// falls behind by more is dropped (its channel is closed and Dropped
// reports it), so a slow client can never hold up a slice.
//
// Events are published at least once (the engine's outbox is resent after
// a crash), each with a stable ID; subscribers may see an ID twice.
type Broadcaster struct {
	buffer int
	log    *slog.Logger

	mu      sync.Mutex
	subs    map[string]map[*Subscriber]struct{} // by thread; "" is every thread
	n       int
	closed  bool
	changed chan struct{} // closed and replaced when n changes
	dropped int
}

// Subscriber is one stream's view of a Broadcaster.
type Subscriber struct {
	thread  string
	ch      chan runtime.OutputEvent
	dropped bool // set under the broadcaster's lock before ch is closed
	gone    bool
}

// Events delivers the subscriber's events. It is closed when the
// subscriber is dropped, unsubscribed, or the broadcaster closes.
func (s *Subscriber) Events() <-chan runtime.OutputEvent { return s.ch }

// NewBroadcaster returns a broadcaster whose subscribers may lag at most
// buffer events behind.
func NewBroadcaster(buffer int, log *slog.Logger) *Broadcaster {
	if buffer <= 0 {
		buffer = 256
	}
	if log == nil {
		log = slog.Default()
	}
	return &Broadcaster{buffer: buffer, log: log, subs: map[string]map[*Subscriber]struct{}{}, changed: make(chan struct{})}
}

// Publish hands ev to its thread's subscribers and to those of every
// thread. It never blocks and never fails.
func (b *Broadcaster) Publish(_ context.Context, ev runtime.OutputEvent) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, key := range []string{ev.ThreadID, ""} {
		for s := range b.subs[key] {
			select {
			case s.ch <- ev:
			default:
				s.dropped = true
				b.dropped++
				b.removeLocked(s)
				b.log.Warn("event stream subscriber dropped: it fell behind", "thread", s.thread, "buffer", b.buffer)
			}
		}
		if ev.ThreadID == "" {
			break
		}
	}
	return nil
}

// Subscribe registers a subscriber to one thread's events, or to every
// thread's when thread is "". Unsubscribe it when done.
func (b *Broadcaster) Subscribe(thread string) (*Subscriber, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrBroadcasterClosed
	}
	s := &Subscriber{thread: thread, ch: make(chan runtime.OutputEvent, b.buffer)}
	m := b.subs[thread]
	if m == nil {
		m = map[*Subscriber]struct{}{}
		b.subs[thread] = m
	}
	m[s] = struct{}{}
	b.n++
	b.signalLocked()
	return s, nil
}

// Unsubscribe removes s; safe to call more than once and after a drop.
func (b *Broadcaster) Unsubscribe(s *Subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removeLocked(s)
}

// Dropped reports whether s was dropped for falling behind.
func (b *Broadcaster) Dropped(s *Subscriber) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return s.dropped
}

func (b *Broadcaster) removeLocked(s *Subscriber) {
	if s.gone {
		return
	}
	s.gone = true
	m := b.subs[s.thread]
	delete(m, s)
	if len(m) == 0 {
		delete(b.subs, s.thread)
	}
	close(s.ch)
	b.n--
	b.signalLocked()
}

func (b *Broadcaster) signalLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Subscribers returns how many subscribers there are and a channel closed
// at the next change of that number (tests wait on it instead of polling).
func (b *Broadcaster) Subscribers() (int, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n, b.changed
}

// DroppedCount returns how many subscribers were dropped for falling behind.
func (b *Broadcaster) DroppedCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Close ends every subscription and refuses new ones. Safe to call twice.
func (b *Broadcaster) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, m := range b.subs {
		for s := range m {
			b.removeLocked(s)
		}
	}
}

// serveEvents streams a subscriber's events as Server-Sent Events until the
// client goes away, the subscriber is dropped, or the server stops. Each
// event is
//
//	id: <event ID>
//	event: <kind: reply, error, notice, view>
//	data: <the runtime.OutputEvent as JSON>
//
// A comment line is sent first (the subscription is live from then on) and
// every keepAlive after.
func serveEvents(w http.ResponseWriter, r *http.Request, b *Broadcaster, thread string, keepAlive time.Duration) {
	sub, err := b.Subscribe(thread)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "%v", err)
		return
	}
	defer b.Unsubscribe(sub)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives any server write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	what := "thread " + thread
	if thread == "" {
		what = "every thread"
	}
	if !send(w, rc, ": subscribed to "+what+"\n\n") {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if !send(w, rc, ": keep-alive\n\n") {
				return
			}
		case ev, ok := <-sub.Events():
			if !ok {
				if b.Dropped(sub) {
					data, _ := json.Marshal(map[string]string{"error": "this stream fell behind and was dropped; reconnect and read the thread's history for what was missed"})
					send(w, rc, "event: dropped\ndata: "+string(data)+"\n\n")
				}
				return
			}
			data, err := json.Marshal(ev)
			if err != nil {
				return
			}
			if !send(w, rc, fmt.Sprintf("id: %s\nevent: %s\ndata: %s\n\n", oneLine(ev.ID), oneLine(ev.Kind), data)) {
				return
			}
		}
	}
}

func send(w http.ResponseWriter, rc *http.ResponseController, s string) bool {
	if _, err := w.Write([]byte(s)); err != nil {
		return false
	}
	return rc.Flush() == nil
}

// oneLine keeps a field on its line: SSE fields end at a newline.
func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
