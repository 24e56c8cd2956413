package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// now stamps live events (StreamEvent.At) when they have a reader;
	// the server sets it to the engine's clock before anything publishes.
	now func() time.Time

	any atomic.Int64 // subscribers in all: Watched's fast path when there are none
	// every counts the subscribers to every thread: Watched's fast path
	// when there are some (every thread is then watched). Without it each
	// Watched took mu, and the engine's observer asks for each event of
	// each slice: under serve's durable load (1,000 agents, a stream of
	// every thread's replies) goroutines spent 14% of their blocked time
	// waiting for mu in Watched and 6% in publish (a Go execution trace,
	// docs/performance.md).
	every atomic.Int64

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
	ch      chan StreamEvent
	dropped bool // set under the broadcaster's lock before ch is closed
	gone    bool
}

// Events delivers the subscriber's events. It is closed when the
// subscriber is dropped, unsubscribed, or the broadcaster closes.
func (s *Subscriber) Events() <-chan StreamEvent { return s.ch }

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

// Publish hands an output event of the runtime (reply, error, notice,
// view) to its thread's subscribers and to those of every thread. It never
// blocks and never fails.
func (b *Broadcaster) Publish(_ context.Context, ev runtime.OutputEvent) error {
	if ev.Kind == "view" {
		return nil // told from history, with the item's time (stream.go)
	}
	b.publish(StreamEvent{ID: ev.ID, ThreadID: ev.ThreadID, Kind: ev.Kind, Text: ev.Text})
	return nil
}

// Watched reports whether anyone subscribes to thread's events (or to
// every thread's): publishers skip building events nobody reads.
func (b *Broadcaster) Watched(thread string) bool {
	if b.any.Load() == 0 {
		return false
	}
	if b.every.Load() > 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs[thread]) > 0 || len(b.subs[""]) > 0
}

func (b *Broadcaster) publish(ev StreamEvent) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, key := range []string{ev.ThreadID, ""} {
		for s := range b.subs[key] {
			if ev.At == 0 { // a live event: the time it is told, read once, only for a reader
				ev.At = runtime.StampOf(b.clock())
			}
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
}

func (b *Broadcaster) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

// Subscribe registers a subscriber to one thread's events, or to every
// thread's when thread is "". Unsubscribe it when done.
func (b *Broadcaster) Subscribe(thread string) (*Subscriber, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrBroadcasterClosed
	}
	s := &Subscriber{thread: thread, ch: make(chan StreamEvent, b.buffer)}
	m := b.subs[thread]
	if m == nil {
		m = map[*Subscriber]struct{}{}
		b.subs[thread] = m
	}
	m[s] = struct{}{}
	b.n++
	b.any.Store(int64(b.n))
	b.every.Store(int64(len(b.subs[""])))
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
	b.any.Store(int64(b.n))
	b.every.Store(int64(len(b.subs[""])))
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

// serveEvents streams events as Server-Sent Events until the client goes
// away, the subscriber is dropped, or the server stops. Each event is
//
//	id: <the replay cursor, history events of one thread only>
//	event: <kind, see docs/serve.md>
//	data: <the StreamEvent as JSON>
//
// A comment line is sent first (the subscription is live from then on) and
// every keepAlive after. ?kinds=a,b keeps only those kinds. For one thread (thread != ""), the stream starts
// with the thread's committed history after the cursor the client sends in
// Last-Event-ID (or ?after=N), then goes on live: the subscription is made
// before history is read, and live history events the replay already
// covered are skipped, so nothing is lost or doubled between the two.
// History events a completion's deltas follow are published ahead of
// their commit (deltaWriter), sent without a cursor, and their committed
// copy is skipped when it is the same event, so the stream keeps history's
// order and still sends each event once.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request, thread string) {
	b := s.events
	after, fresh := 0, true
	if thread != "" {
		v := r.Header.Get("Last-Event-ID")
		if v == "" {
			v = r.URL.Query().Get("after")
		}
		if v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				writeError(w, http.StatusBadRequest, "Last-Event-ID", "%q is not an event cursor (a non-negative integer this stream sent as id)", v)
				return
			}
			after, fresh = n, false
		}
	}
	var only map[string]bool // ?kinds=state,error: only these kinds
	if v := r.URL.Query().Get("kinds"); v != "" {
		only = map[string]bool{}
		for _, k := range strings.Split(v, ",") {
			only[strings.TrimSpace(k)] = true
		}
	}
	sub, err := b.Subscribe(thread)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "", "%v", err)
		return
	}
	defer b.Unsubscribe(sub)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives any server write timeout
	_ = rc.SetReadDeadline(time.Time{})  // and the read timeout, which would cancel it
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
	replayed := 0
	if thread != "" {
		var ok bool
		if replayed, ok = s.replay(w, rc, r, thread, after, fresh, only); !ok {
			return
		}
	}
	tick := time.NewTicker(s.set.keepAlive)
	defer tick.Stop()
	var ahead map[string]StreamEvent // history events sent before their commit
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
					data, _ := json.Marshal(map[string]string{"error": "this stream fell behind and was dropped; reconnect with Last-Event-ID to get what was missed"})
					send(w, rc, "event: dropped\ndata: "+string(data)+"\n\n")
				}
				return
			}
			if ev.Seq > 0 && ev.Seq <= replayed {
				continue // the replay sent it
			}
			if only != nil && !only[ev.Kind] {
				continue
			}
			if sent, ok := ahead[ev.ID]; ok {
				if ev.ahead {
					continue // a retried completion publishes it ahead again
				}
				delete(ahead, ev.ID)
				// The copy sent ahead had no item time yet (it was stamped
				// when told); the commit's time is no other event.
				sent.At = ev.At
				if reflect.DeepEqual(sent, ev) {
					continue // sent ahead of its commit; committed as sent
				}
				// committed otherwise: send what history holds
			}
			if ev.ahead {
				if ahead == nil {
					ahead = map[string]StreamEvent{}
				}
				sent := ev
				sent.ahead = false
				ahead[ev.ID] = sent
			}
			if !sendEvent(w, rc, ev, thread != "" && !ev.ahead) {
				return
			}
		}
	}
}

// replay sends a thread's history events after the cursor; a fresh stream
// also gets the thread's current views and dead letters. It returns the
// cursor the replay reached.
func (s *Server) replay(w http.ResponseWriter, rc *http.ResponseController, r *http.Request, thread string, after int, fresh bool, only map[string]bool) (int, bool) {
	th, err := s.store.Load(r.Context(), thread)
	if err != nil {
		data, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("loading thread %s: %v", thread, err)})
		send(w, rc, "event: error\ndata: "+string(data)+"\n\n")
		return 0, false
	}
	own := th.Own()
	if after > len(own) {
		// A cursor from before a restart of an in-memory server: start over.
		if !sendEvent(w, rc, StreamEvent{ThreadID: thread, Kind: "reset", Text: fmt.Sprintf("cursor %d is past the thread's %d items; replaying from the start", after, len(own))}, false) {
			return 0, false
		}
		after, fresh = 0, true
	}
	for _, ev := range s.historyEvents(thread, after, own[after:]) {
		if only != nil && !only[ev.Kind] {
			continue
		}
		if !sendEvent(w, rc, ev, true) {
			return 0, false
		}
	}
	if fresh {
		for _, ev := range currentViews(thread, own[:after]) { // the latest of the views the replay skipped
			if !sendEvent(w, rc, ev, false) {
				return 0, false
			}
		}
	}
	if only == nil || only["view"] {
		// The live views (of calls still going on, kept out of history)
		// on every connection: a resumed stream missed their updates.
		for _, v := range s.receiver.LiveViews(r.Context(), thread) {
			if !sendEvent(w, rc, liveViewEvent(thread, v), false) {
				return 0, false
			}
		}
	}
	if fresh {
		for _, d := range s.deadLettersOf(thread) {
			if !sendEvent(w, rc, d.event(), false) {
				return 0, false
			}
		}
	}
	return len(own), true
}

func sendEvent(w http.ResponseWriter, rc *http.ResponseController, ev StreamEvent, cursor bool) bool {
	data, err := json.Marshal(ev)
	if err != nil {
		return false
	}
	var b strings.Builder
	if cursor && ev.Seq > 0 {
		b.WriteString("id: " + strconv.Itoa(ev.Seq) + "\n")
	}
	b.WriteString("event: " + oneLine(ev.Kind) + "\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return send(w, rc, b.String())
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
