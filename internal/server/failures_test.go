package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// flakyChat is a local OpenAI-compatible endpoint that answers 503 (with
// Retry-After: 0, which asks for nothing longer) while down, and one
// streamed reply when up.
type flakyChat struct {
	mu    sync.Mutex
	down  bool
	calls int
	// downCalls counts the requests answered 503.
	downCalls int
}

func (f *flakyChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls++
	down := f.down
	if down {
		f.downCalls++
	}
	f.mu.Unlock()
	if down {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"the model is overloaded"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	const head = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"local"`
	for _, c := range []string{head + `,"choices":[{"index":0,"delta":{"role":"assistant","content":"I am back."},"finish_reason":null}]}`,
		head + `,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]"} {
		fmt.Fprintf(w, "data: %s\n\n", c)
	}
}

func (f *flakyChat) setDown(d bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = d
}

func localModel(base string) *model.Catalog {
	return &model.Catalog{Default: "local", Models: []model.Config{{Name: "local", Provider: model.ProviderOpenAI,
		ModelID: "local", ContextWindow: 32000, MaxOutputTokens: 1000, OpenAI: &model.OpenAIConfig{BaseURL: base + "/v1"}}}}
}

// TestProviderOutageWaitsAndRecovers: a provider that refuses connections,
// then answers 503, then comes back. The thread waits through timers (its
// status says so, and no thread goroutine runs while it waits), nothing
// is dead-lettered, and the reply arrives once the provider is back.
func TestProviderOutageWaitsAndRecovers(t *testing.T) {
	t.Parallel()
	// Refused: a port nobody listens on (yet).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := startServer(t, Config{Models: localModel("http://" + addr),
		Limits: Limits{ModelAttempts: 2, ProviderWait: "20ms", ProviderWaitMax: "40ms"}})
	events := openStream(t, srv.URL()+"/threads/o1/events")
	defer events.close()
	postMessage(t, srv, "o1", `{"text":"are you there?"}`)
	waitStatus(t, events, "waiting_for_provider", "connection refused")

	// 503 with Retry-After: the provider answers but is down.
	chat := &flakyChat{down: true}
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening again on %s: %v", addr, err)
	}
	hs := &http.Server{Handler: chat}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	waitStatus(t, events, "waiting_for_provider", "overloaded")
	// The first slice after the listener came back may have met the
	// refusal once and the 503 once; the next wait's slice met only 503s.
	waitStatus(t, events, "waiting_for_provider", "overloaded")
	// While it waits, no thread has a goroutine: the wait is a timer.
	waitIdle(t, srv)
	if th := getThread(t, srv, "o1"); th.Status != "waiting_for_provider" && th.Status != "running" {
		t.Fatalf("status %q while the provider is down", th.Status)
	}

	chat.setDown(false)
	if ev := events.nextOf(t, "turn"); ev.Data.Text != "I am back." {
		t.Fatalf("turn %+v, want the reply", ev.Data)
	}
	waitIdle(t, srv)
	th := getThread(t, srv, "o1")
	if th.Status != "idle" || kinds(th.Items) != "user assistant" {
		t.Fatalf("after recovery: status %q, history %s", th.Status, kinds(th.Items))
	}
	var dl deadLettersResponse
	do(t, http.MethodGet, srv.URL()+"/dead_letters", "", &dl)
	if dl.Total != 0 {
		t.Fatalf("dead letters after an outage: %+v", dl.DeadLetters)
	}
	chat.mu.Lock()
	defer chat.mu.Unlock()
	if chat.downCalls < 2 {
		t.Fatalf("%d calls answered 503, want at least the 2 attempts of one slice", chat.downCalls)
	}
}

// waitStatus reads state events until one says status with a reason
// containing reason.
func waitStatus(t *testing.T, s *stream, status, reason string) sseEvent {
	t.Helper()
	for {
		ev := s.nextOf(t, "state")
		if st := ev.Data.State; st != nil && st.Status == status && strings.Contains(st.Reason, reason) {
			return ev
		}
	}
}

// TestModelFailureIsHistory: a permanent provider error is an error item
// in history (what failed, the provider's text, the attempts), the
// thread's status says failed with the reason, the info log says so, and
// all of it is there after a restart on the same data directory.
func TestModelFailureIsHistory(t *testing.T) {
	t.Parallel()
	ts := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"message":"context length exceeded"}}`)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ts.Serve(ln)
	t.Cleanup(func() { ts.Close() })
	cfg := Config{Models: localModel("http://" + ln.Addr().String()), Data: t.TempDir()}
	srv := startServer(t, cfg)
	events := openStream(t, srv.URL()+"/threads/f1/events")
	postMessage(t, srv, "f1", `{"text":"a very long question"}`)
	if ev := events.nextOf(t, "failed"); !strings.Contains(ev.Data.Text, "context length exceeded") || !strings.Contains(ev.Data.Args, `"attempts":1`) {
		t.Fatalf("failed event %+v", ev.Data)
	}
	waitStatus(t, events, "failed", "context length exceeded")
	events.close()
	waitIdle(t, srv)
	srv.Stop()

	again := startServer(t, cfg)
	th := getThread(t, again, "f1")
	if th.Status != "failed" || !strings.Contains(th.Reason, "context length exceeded") {
		t.Fatalf("after a restart: status %q reason %q", th.Status, th.Reason)
	}
	last := th.Items[len(th.Items)-1]
	if !runtime.IsFailure(&last) {
		t.Fatalf("last item after a restart %+v, want the failure", last)
	}
	replay := openStream(t, again.URL()+"/threads/f1/events")
	defer replay.close()
	if ev := replay.nextOf(t, "failed"); !strings.Contains(ev.Data.Text, "context length exceeded") {
		t.Fatalf("replayed failed event %+v", ev.Data)
	}
}

// TestResendWithOtherTextIsConflict: an ID sent again with other text is a
// 409 naming the ID, whether the first is still in flight or consumed;
// the same text again stays an idempotent 202.
func TestResendWithOtherTextIsConflict(t *testing.T) {
	t.Parallel()
	g := newGatedModel(t, `{"default": [{"text": "one reply"}]}`)
	srv := startServerWith(t, Config{}, g)
	url := srv.URL() + "/threads/c1/messages"
	postMessage(t, srv, "c1", `{"text":"first text","id":"dup"}`)
	g.waitStarted(t) // in flight: not in history yet
	var e apiError
	if code := do(t, http.MethodPost, url, `{"text":"other text","id":"dup"}`, &e); code != http.StatusConflict || e.Field != "id" || !strings.Contains(e.Error, "dup") {
		t.Fatalf("in flight, other text: %d %+v", code, e)
	}
	postMessage(t, srv, "c1", `{"text":"first text","id":"dup"}`) // a retry
	g.release <- struct{}{}
	waitIdle(t, srv)
	if code := do(t, http.MethodPost, url, `{"text":"other text","id":"dup"}`, &e); code != http.StatusConflict || !strings.Contains(e.Error, "dup") {
		t.Fatalf("consumed, other text: %d %+v", code, e)
	}
	postMessage(t, srv, "c1", `{"text":"first text","id":"dup"}`)
	waitIdle(t, srv)
	if th := getThread(t, srv, "c1"); kinds(th.Items) != "user assistant" || th.Items[0].Text != "first text" {
		t.Fatalf("history %s %+v, want the first text once", kinds(th.Items), th.Items)
	}
}
