package rap

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

func newTestDispatcher(t *testing.T, retry RetryPolicy) *Dispatcher {
	t.Helper()
	d, err := NewDispatcher(DispatcherConfig{Signer: &Signer{Keys: testKeyring(t), BaseURL: "https://rt.example.com/cb"},
		Retry: retry, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

var testInv = runtime.Invocation{ThreadID: "thr_1", CallID: "call_1", Name: "t", Args: `{"a":1}`, Ancestors: []string{"thr_0"}, UserID: "u1"}

func TestInvokeWireFormat(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]json.RawMessage, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&m)
		if r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "content type", 415)
			return
		}
		got <- m
	}))
	t.Cleanup(srv.Close)
	d := newTestDispatcher(t, fastRetry(1))
	if err := d.Invoke(context.Background(), srv.URL, "op", testInv); err != nil {
		t.Fatal(err)
	}
	m := <-got
	for field, want := range map[string]string{"operation": `"op"`, "arguments": `{"a":1}`, "id": `"call_1"`,
		"call_id": `null`, "group_id": `"thr_1"`, "thread_ancestors": `["thr_0"]`, "user_id": `"u1"`} {
		if string(m[field]) != want {
			t.Errorf("%s = %s, want %s", field, m[field], want)
		}
	}
	var cb string
	_ = json.Unmarshal(m["callback_url"], &cb)
	if !strings.HasPrefix(cb, "https://rt.example.com/cb?") || !strings.Contains(cb, "s=") {
		t.Errorf("callback_url = %q", cb)
	}
}

// TestInvokeNamesTheAgent: the thread's agent goes out as the
// x-agentslice-agent extension (its name and network policy), and a
// runtime without agents sends no such field.
func TestInvokeNamesTheAgent(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]json.RawMessage, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&m)
		got <- m
	}))
	t.Cleanup(srv.Close)
	d := newTestDispatcher(t, fastRetry(1))
	inv := testInv
	inv.Agent, inv.AgentNetwork = "offline", "deny"
	if err := d.Invoke(context.Background(), srv.URL, "op", inv); err != nil {
		t.Fatal(err)
	}
	if m := <-got; string(m["x-agentslice-agent"]) != `{"name":"offline","network":"deny"}` {
		t.Errorf("x-agentslice-agent = %s", m["x-agentslice-agent"])
	}
	if err := d.Invoke(context.Background(), srv.URL, "op", testInv); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m["x-agentslice-agent"] != nil {
		t.Errorf("no agent, yet x-agentslice-agent = %s", m["x-agentslice-agent"])
	}
}

func TestInvokeRetries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name         string
		statuses     []int // answers in order; the last repeats
		attempts     int
		wantAttempts int
		wantRejected string // "" = accepted
	}{
		{"accepted", []int{200}, 5, 1, ""},
		{"202 is accepted", []int{202}, 5, 1, ""},
		{"5xx then accepted", []int{503, 500, 200}, 5, 3, ""},
		{"4xx is final", []int{400}, 5, 1, "HTTP 400"},
		{"404 is final", []int{404}, 5, 1, "HTTP 404"},
		{"5xx until the budget is spent", []int{502}, 4, 4, "HTTP 502 to each of 4 attempts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var n counter
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := n.inc() - 1
				if i >= len(tc.statuses) {
					i = len(tc.statuses) - 1
				}
				w.WriteHeader(tc.statuses[i])
				_, _ = w.Write([]byte("reason\x00 here"))
			}))
			t.Cleanup(srv.Close)
			err := newTestDispatcher(t, fastRetry(tc.attempts)).Invoke(context.Background(), srv.URL, "op", testInv)
			if got := n.get(); got != tc.wantAttempts {
				t.Errorf("%d attempts, want %d", got, tc.wantAttempts)
			}
			if tc.wantRejected == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var rej *runtime.ToolRejectedError
			if !errors.As(err, &rej) || !strings.Contains(rej.Reason, tc.wantRejected) {
				t.Fatalf("error = %v, want a ToolRejectedError containing %q", err, tc.wantRejected)
			}
			if want := "rejected the call"; tc.statuses[len(tc.statuses)-1] >= 500 {
				if msg := rej.Error(); !strings.Contains(msg, "tool op failed") || strings.Contains(msg, want) {
					t.Fatalf("a server failing with 5xx is worded %q", msg)
				}
			}
		})
	}
}

// TestInvokeServerDown: a tool server that is not listening gets a bounded
// number of attempts, then the model gets an error result.
func TestInvokeServerDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = newTestDispatcher(t, fastRetry(3)).Invoke(context.Background(), "http://"+addr+"/invoke", "op", testInv)
	var rej *runtime.ToolRejectedError
	if !errors.As(err, &rej) || !strings.Contains(rej.Reason, "(3 attempts)") || !rej.Unreachable {
		t.Fatalf("error = %v, want an unreachable ToolRejectedError after 3 attempts", err)
	}
	// The model reads what happened: unreachable, not refused.
	if msg := rej.Error(); !strings.Contains(msg, "tool op is unreachable") || strings.Contains(msg, "rejected") {
		t.Fatalf("wording %q", msg)
	}
}

// TestInvokeTotalBudget: the total time bound stops retries even when many
// attempts remain.
func TestInvokeTotalBudget(t *testing.T) {
	t.Parallel()
	var n counter
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.inc()
		w.WriteHeader(500)
	}))
	t.Cleanup(srv.Close)
	policy := RetryPolicy{Attempts: 1 << 20, Base: time.Millisecond, Max: time.Millisecond, Total: 100 * time.Millisecond}
	err := newTestDispatcher(t, policy).Invoke(context.Background(), srv.URL, "op", testInv)
	var rej *runtime.ToolRejectedError
	if !errors.As(err, &rej) {
		t.Fatalf("error = %v, want a ToolRejectedError", err)
	}
	if n.get() >= 1<<20 {
		t.Fatal("the total budget did not stop the retries")
	}
}

// TestInvokeCallerCancelled: a slice that is cancelled gets its context's
// error, not a rejection (the call is dispatched again by the next slice).
func TestInvokeCallerCancelled(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := newTestDispatcher(t, fastRetry(3)).Invoke(ctx, srv.URL, "op", testInv)
	var rej *runtime.ToolRejectedError
	if errors.As(err, &rej) || !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled and no rejection", err)
	}
}

// TestNotifications: cancel_tool_call and close_thread are sent to every
// server concurrently, once (never retried), without blocking the caller.
func TestNotifications(t *testing.T) {
	t.Parallel()
	arrived := make(chan string, 8)
	release := make(chan struct{})
	var hits counter
	handler := func(w http.ResponseWriter, r *http.Request) {
		hits.inc()
		var b map[string]string
		_ = json.NewDecoder(r.Body).Decode(&b)
		arrived <- r.URL.Path + " " + b["thread_id"] + " " + b["tool_call_id"]
		<-release
		w.WriteHeader(500) // must not be retried
	}
	a := httptest.NewServer(http.HandlerFunc(handler))
	b := httptest.NewServer(http.HandlerFunc(handler))
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	d := newTestDispatcher(t, fastRetry(5))
	l, err := NewLoader(LoaderConfig{Servers: []string{a.URL, b.URL + "/"}, Dispatcher: d, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	l.CloseThread("thr_1") // returns while both servers are still blocked
	got := map[string]bool{waitFor(t, arrived): true, waitFor(t, arrived): true}
	if !got["/close_thread thr_1 "] || len(got) != 1 {
		t.Fatalf("notifications = %v", got)
	}
	// A cancellation goes to every configured server, not only the
	// tool's own.
	tool := &remoteTool{d: d, set: &loadedToolset{base: a.URL}, servers: l.cfg.Servers}
	if err := tool.Cancel(context.Background(), "thr_1", "call_1"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got := waitFor(t, arrived); got != "/cancel_tool_call thr_1 call_1" {
			t.Fatalf("cancel = %q", got)
		}
	}
	close(release)
	d.Close() // waits for the four in flight
	d.Close()
	if n := hits.get(); n != 4 {
		t.Fatalf("%d notification requests, want 4 (never retried)", n)
	}
	if d.Notify(a.URL+"/close_thread", CloseThread{ThreadID: "x"}) {
		t.Fatal("Notify after Close started a notification")
	}
}

func TestPostChoice(t *testing.T) {
	t.Parallel()
	got := make(chan ChoiceResponse, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c ChoiceResponse
		_ = json.NewDecoder(r.Body).Decode(&c)
		got <- c
	}))
	t.Cleanup(srv.Close)
	choices := NewMemoryChoices(10)
	def := 0
	_ = choices.PutChoice(context.Background(), "thr_1", UserChoice{ID: "call_1", Prompt: "p", Choices: []string{"a", "b"}, Default: &def, ResponseURL: srv.URL})
	if err := choices.Answer(context.Background(), nil, "thr_1", "call_1", 2); err == nil {
		t.Fatal("an out-of-range selection was sent")
	}
	if err := choices.Answer(context.Background(), nil, "thr_1", "call_1", 1); err != nil {
		t.Fatal(err)
	}
	if c := <-got; c.ID != "call_1" || c.Selected != 1 {
		t.Fatalf("posted %+v", c)
	}
	if _, ok := choices.Choice("thr_1", "call_1"); ok {
		t.Fatal("an answered choice is still pending")
	}
}
