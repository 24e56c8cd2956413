package rap

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

const waitTimeout = 10 * time.Second

// recordingQueue is a runtime.Queue that validates and records messages.
type recordingQueue struct {
	mu   sync.Mutex
	msgs []runtime.Message
	ch   chan runtime.Message
	err  error // returned by Send when set
}

func newRecordingQueue() *recordingQueue { return &recordingQueue{ch: make(chan runtime.Message, 256)} }

func (q *recordingQueue) Send(_ context.Context, msgs ...runtime.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			return err
		}
	}
	for _, m := range msgs {
		q.msgs = append(q.msgs, m)
		q.ch <- m
	}
	return nil
}

func (q *recordingQueue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs)
}

// next waits for the next message.
func (q *recordingQueue) next(t *testing.T) runtime.Message {
	t.Helper()
	select {
	case m := <-q.ch:
		return m
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for a message on the queue")
		return runtime.Message{}
	}
}

func testKey(id string) Key {
	return Key{ID: id, Secret: []byte(strings.Repeat(id, 64)[:MinKeyLen])}
}

func testKeyring(t *testing.T) *Keyring {
	t.Helper()
	kr, err := NewKeyring(testKey("k1"))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// callbackRig is a Receiver on a real HTTP server with a Signer for it.
type callbackRig struct {
	q      *recordingQueue
	rcv    *Receiver
	srv    *httptest.Server
	signer *Signer
}

func newCallbackRig(t *testing.T, mutate func(*ReceiverConfig)) *callbackRig {
	t.Helper()
	kr := testKeyring(t)
	q := newRecordingQueue()
	cfg := ReceiverConfig{Keys: kr, Queue: q, Logger: quietLogger()}
	if mutate != nil {
		mutate(&cfg)
	}
	rcv, err := NewReceiver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/rap/callback", rcv)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &callbackRig{q: q, rcv: rcv, srv: srv, signer: &Signer{Keys: cfg.Keys, BaseURL: srv.URL + "/rap/callback"}}
}

func (r *callbackRig) url(t *testing.T, thread, call string) string {
	t.Helper()
	u, err := r.signer.CallbackURL(thread, call)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// post POSTs body to url and returns the status and the decoded error.
func post(t *testing.T, url string, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error
}

// counter counts requests to a handler.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) inc() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func fastRetry(attempts int) RetryPolicy {
	return RetryPolicy{Attempts: attempts, Base: time.Millisecond, Max: 2 * time.Millisecond, Total: waitTimeout}
}
