// Package raptest runs RAP tool servers in tests over real HTTP: a callback
// Receiver feeding a recording queue, a Dispatcher with signed callback URLs,
// and helpers to invoke a tool and wait for what it sends back.
//
// It is for tests only and must not be imported by production code.
package raptest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Timeout bounds every wait in this package.
const Timeout = 20 * time.Second

// Queue is a runtime.Queue that validates and records messages.
type Queue struct {
	mu   sync.Mutex
	msgs []runtime.Message
	ch   chan runtime.Message
}

// Send records msgs after validating them all.
func (q *Queue) Send(_ context.Context, msgs ...runtime.Message) error {
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			return err
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range msgs {
		q.msgs = append(q.msgs, m)
		q.ch <- m
	}
	return nil
}

// Count returns how many messages were sent.
func (q *Queue) Count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs)
}

// Rig is a receiver and a dispatcher on real HTTP servers.
type Rig struct {
	Queue      *Queue
	Receiver   *rap.Receiver
	Signer     *rap.Signer
	Dispatcher *rap.Dispatcher
	Callbacks  *httptest.Server
}

// QuietLogger discards everything.
func QuietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// FastRetry is a retry policy with millisecond waits.
func FastRetry(attempts int) rap.RetryPolicy {
	return rap.RetryPolicy{Attempts: attempts, Base: time.Millisecond, Max: 5 * time.Millisecond, Total: Timeout}
}

// NewRig starts a callback receiver and builds a dispatcher for it. The
// servers are closed when the test ends.
func NewRig(t testing.TB) *Rig {
	t.Helper()
	kr, err := rap.NewKeyring(rap.Key{ID: "test", Secret: []byte(strings.Repeat("s", rap.MinKeyLen))})
	if err != nil {
		t.Fatal(err)
	}
	q := &Queue{ch: make(chan runtime.Message, 1024)}
	rcv, err := rap.NewReceiver(rap.ReceiverConfig{Keys: kr, Queue: q, Logger: QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	signer := &rap.Signer{Keys: kr, BaseURL: srv.URL + "/callback"}
	d, err := rap.NewDispatcher(rap.DispatcherConfig{Signer: signer, Retry: FastRetry(3), Logger: QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return &Rig{Queue: q, Receiver: rcv, Signer: signer, Dispatcher: d, Callbacks: srv}
}

// Service is a tool server with a lifecycle: a kit *rap.Server, the MCP
// proxy.
type Service interface {
	http.Handler
	Start(ctx context.Context) error
	Stop()
}

// StartServer starts a tool server on a real HTTP server and returns its base
// URL. It is stopped when the test ends.
func StartServer(t testing.TB, s Service) string {
	t.Helper()
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Stop() })
	return hs.URL
}

// Invoke dispatches one call to the tool server at base (through a Loader,
// so the toolset is fetched and validated and the arguments checked against
// the schema). It returns the dispatch error.
func (r *Rig) Invoke(t testing.TB, base, thread, call, tool, args string) error {
	t.Helper()
	return r.InvokeWith(t, base, runtime.Invocation{ThreadID: thread, CallID: call, Name: tool, Args: args})
}

// InvokeWith is Invoke of a whole runtime invocation (its agent, say).
func (r *Rig) InvokeWith(t testing.TB, base string, inv runtime.Invocation) error {
	t.Helper()
	thread, tool, args := inv.ThreadID, inv.Name, inv.Args
	l, err := rap.NewLoader(rap.LoaderConfig{Servers: []string{base}, Dispatcher: r.Dispatcher, Fetch: FastRetry(2), Logger: QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	set, err := l.SetFor(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	if p := set.Problems(); len(p) > 0 {
		t.Fatalf("toolset problems: %v", p)
	}
	e, ok := set.Lookup(tool)
	if !ok {
		t.Fatalf("tool %q is not offered by %s", tool, base)
	}
	if err := e.Async.(runtime.ArgsValidator).ValidateArgs(args); err != nil {
		return err
	}
	return e.Async.Dispatch(context.Background(), inv)
}

// Next waits for the next message on the queue.
func (r *Rig) Next(t testing.TB) runtime.Message {
	t.Helper()
	select {
	case m := <-r.Queue.ch:
		return m
	case <-time.After(Timeout):
		t.Fatal("timed out waiting for a callback")
		return runtime.Message{}
	}
}

// Until collects messages until one satisfies last (inclusive).
func (r *Rig) Until(t testing.TB, last func(runtime.Message) bool) []runtime.Message {
	t.Helper()
	var out []runtime.Message
	for {
		m := r.Next(t)
		out = append(out, m)
		if last(m) {
			return out
		}
	}
}

// Get is a GET helper that fails the test on transport errors.
func Get(t testing.TB, url string) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
