package rap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// toolRig is a kit-built tool server, the callback receiver feeding a
// recording queue, and the dispatch side (Dispatcher, Loader), all over real
// HTTP.
type toolRig struct {
	*callbackRig
	kit    *Server
	kitSrv *httptest.Server
	disp   *Dispatcher
	loader *Loader
	runs   atomic.Int64
}

func newToolRig(t *testing.T, extra ...Tool) *toolRig {
	t.Helper()
	rig := &toolRig{callbackRig: newCallbackRig(t, nil)}
	tools := append([]Tool{
		{
			Name: "echo", Description: "Echoes text back.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
			Run: func(ctx context.Context, c *Call) error {
				rig.runs.Add(1)
				var a struct{ Text string }
				if err := c.Args(&a); err != nil {
					return err
				}
				return c.Result(ctx, "echo: "+a.Text)
			},
		},
		{
			Name: "watch", Description: "Subscribes to three ticks.",
			Annotations: &Annotations{LongRunning: true},
			Run: func(ctx context.Context, c *Call) error {
				if err := c.Subscribe(ctx, "watching"); err != nil {
					return err
				}
				for i := 1; i <= 3; i++ {
					if err := c.Event(ctx, "tick", true, i == 3); err != nil {
						return err
					}
				}
				return nil
			},
		},
		{
			Name: "fail", Description: "Always fails.",
			Run: func(ctx context.Context, c *Call) error { return errors.New("disk full") },
		},
		{
			Name: "silent", Description: "Returns without a result.",
			Run: func(ctx context.Context, c *Call) error { return nil },
		},
		{
			Name: "panics", Description: "Panics.",
			Run: func(ctx context.Context, c *Call) error { panic("boom") },
		},
		{
			Name: "interactive", Description: "Asks for auth, a choice and updates a view.",
			Run: func(ctx context.Context, c *Call) error {
				if err := c.OAuth(ctx, "https://auth.example.com/a"); err != nil {
					return err
				}
				if err := c.Choice(ctx, "Which?", []string{"a", "b"}, 1, "https://tool.example.com/answer"); err != nil {
					return err
				}
				if err := c.View(ctx, "progress", map[string]int{"done": 1}); err != nil {
					return err
				}
				return c.ResultContent(ctx, []ContentItem{{Type: "text", Text: "done"}})
			},
		},
	}, extra...)
	kit, err := NewServer(ServerConfig{Name: "test tools", Tools: tools, Retry: fastRetry(5), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	rig.kit = kit
	rig.kitSrv = httptest.NewServer(kit)
	t.Cleanup(func() { rig.kitSrv.Close(); kit.Stop() })

	rig.disp, err = NewDispatcher(DispatcherConfig{Signer: rig.signer, Retry: fastRetry(3), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rig.disp.Close)
	rig.loader, err = NewLoader(LoaderConfig{Servers: []string{rig.kitSrv.URL}, Dispatcher: rig.disp, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return rig
}

func rootThread(id string) *runtime.Thread {
	return &runtime.Thread{ID: id, State: runtime.ThreadState{Stack: []string{id}}}
}

// dispatch looks the tool up for thread, validates args and dispatches.
func (rig *toolRig) dispatch(t *testing.T, thread *runtime.Thread, call, name, args string) error {
	t.Helper()
	ts, err := rig.loader.Toolset(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := ts.Lookup(name)
	if !ok {
		t.Fatalf("tool %q not offered; problems: %v", name, ts.(*Set).Problems())
	}
	if err := e.Async.(runtime.ArgsValidator).ValidateArgs(args); err != nil {
		return err
	}
	return e.Async.Dispatch(context.Background(), runtime.Invocation{ThreadID: thread.ID, CallID: call, Name: name,
		Args: args, Ancestors: thread.State.Stack[:len(thread.State.Stack)-1]})
}

func TestEndToEnd(t *testing.T) {
	t.Parallel()
	rig := newToolRig(t)
	th := rootThread("thr_e2e")

	t.Run("result", func(t *testing.T) {
		if err := rig.dispatch(t, th, "call_1", "echo", `{"text":"hi"}`); err != nil {
			t.Fatal(err)
		}
		m := rig.q.next(t)
		if m.Kind != runtime.KindToolResult || m.Text != "echo: hi" || m.ToolCallID != "call_1" || m.ThreadID != "thr_e2e" ||
			m.ID != runtime.DeriveID("res_", "thr_e2e", "call_1") {
			t.Fatalf("message = %+v", m)
		}
	})
	t.Run("redelivered dispatch runs once", func(t *testing.T) {
		before := rig.runs.Load()
		if err := rig.dispatch(t, th, "call_1", "echo", `{"text":"hi"}`); err != nil {
			t.Fatal(err)
		}
		if err := rig.dispatch(t, th, "call_2", "echo", `{"text":"second"}`); err != nil {
			t.Fatal(err)
		}
		if m := rig.q.next(t); m.ToolCallID != "call_2" {
			t.Fatalf("got %+v, want the result of call_2 only", m)
		}
		if n := rig.runs.Load() - before; n != 1 {
			t.Fatalf("the tool ran %d times for one new call", n)
		}
	})
	t.Run("invalid args never dispatched", func(t *testing.T) {
		err := rig.dispatch(t, th, "call_3", "echo", `{"text":1}`)
		if err == nil || !strings.Contains(err.Error(), "/text") {
			t.Fatalf("ValidateArgs = %v, want an error naming /text", err)
		}
	})
	t.Run("subscription", func(t *testing.T) {
		if err := rig.dispatch(t, th, "call_4", "watch", `{}`); err != nil {
			t.Fatal(err)
		}
		m := rig.q.next(t)
		if m.Kind != runtime.KindToolResult || !m.Subscription {
			t.Fatalf("first message = %+v, want a subscription result", m)
		}
		ids := map[string]bool{}
		for i := 1; i <= 3; i++ {
			e := rig.q.next(t)
			if e.Kind != runtime.KindEvent || e.ToolCallID != "call_4" || !e.Associative || e.Final != (i == 3) || e.Text != "tick" {
				t.Fatalf("event %d = %+v", i, e)
			}
			ids[e.ID] = true
		}
		if len(ids) != 3 {
			t.Fatalf("three identical ticks got %d distinct IDs; the kit's event_id must keep them apart", len(ids))
		}
	})
	t.Run("failures become error results", func(t *testing.T) {
		for call, want := range map[string]string{"call_5": "error: disk full", "call_6": "error: silent finished without a result", "call_7": "error: the tool failed unexpectedly"} {
			name := map[string]string{"call_5": "fail", "call_6": "silent", "call_7": "panics"}[call]
			if err := rig.dispatch(t, th, call, name, `{}`); err != nil {
				t.Fatal(err)
			}
			if m := rig.q.next(t); m.Text != want || m.ToolCallID != call {
				t.Fatalf("%s: message = %+v, want text %q", name, m, want)
			}
		}
	})
	t.Run("oauth, choice, view, content", func(t *testing.T) {
		if err := rig.dispatch(t, th, "call_8", "interactive", `{}`); err != nil {
			t.Fatal(err)
		}
		if m := rig.q.next(t); m.Kind != runtime.KindNotice || !strings.Contains(m.Text, "https://auth.example.com/a") {
			t.Fatalf("oauth notice = %+v", m)
		}
		if m := rig.q.next(t); m.Kind != runtime.KindNotice || !strings.Contains(m.Text, "1. b (default)") {
			t.Fatalf("choice notice = %+v", m)
		}
		if m := rig.q.next(t); m.Kind != runtime.KindToolResult || len(m.Content) != 1 || m.Content[0].Text != "done" {
			t.Fatalf("result = %+v", m)
		}
		if v, ok, _ := rig.rcv.Views().View(context.Background(), "thr_e2e", "progress"); !ok || string(v) != `{"done":1}` {
			t.Fatalf("view = %s %v", v, ok)
		}
	})
	t.Run("child thread shares the root's toolset and sends ancestors", func(t *testing.T) {
		child := &runtime.Thread{ID: "thr_child", State: runtime.ThreadState{Stack: []string{"thr_e2e", "thr_child"}}}
		if err := rig.dispatch(t, child, "call_9", "echo", `{"text":"from child"}`); err != nil {
			t.Fatal(err)
		}
		if m := rig.q.next(t); m.ThreadID != "thr_child" || m.Text != "echo: from child" {
			t.Fatalf("message = %+v", m)
		}
	})
}

// TestKitRejectsBadInvocations: an invocation the kit cannot even answer
// (no id, group or callback URL; malformed JSON) gets 400 naming the field,
// and runs nothing.
func TestKitRejectsBadInvocations(t *testing.T) {
	t.Parallel()
	rig := newToolRig(t)
	cb := rig.url(t, "thr_1", "call_1")
	inv := func(mut func(m map[string]any)) string {
		m := map[string]any{"operation": "echo", "arguments": map[string]any{"text": "x"}, "id": "call_1",
			"call_id": nil, "callback_url": cb, "group_id": "thr_1"}
		mut(m)
		b, _ := json.Marshal(m)
		return string(b)
	}
	cases := []struct {
		name, body, want string
	}{
		{"no id", inv(func(m map[string]any) { delete(m, "id") }), `field "id"`},
		{"no group", inv(func(m map[string]any) { delete(m, "group_id") }), `field "group_id"`},
		{"bad callback", inv(func(m map[string]any) { m["callback_url"] = "not a url" }), `field "callback_url"`},
		{"wrong type", inv(func(m map[string]any) { m["thread_ancestors"] = "x" }), `field "thread_ancestors"`},
	}
	for _, tc := range cases {
		status, msg := post(t, rig.kitSrv.URL+InvokePath, tc.body)
		if status != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %q, want 400 containing %q", tc.name, status, msg, tc.want)
		}
	}
	if rig.runs.Load() != 0 || rig.q.count() != 0 {
		t.Fatal("a rejected invocation ran")
	}
}

// TestKitAnswersBadOperationAsync: per the spec's SHOULD, an unknown
// operation or arguments the schema refuses are acknowledged with 200 and
// reported as an error tool_result that echoes call_id.
func TestKitAnswersBadOperationAsync(t *testing.T) {
	t.Parallel()
	rig := newToolRig(t)
	for _, tc := range []struct {
		call, op string
		args     any
		want     string
	}{
		{"call_op", "nope", map[string]any{}, `unknown operation "nope"`},
		{"call_args", "echo", map[string]any{"text": 3}, "invalid arguments for echo"},
	} {
		body, _ := json.Marshal(map[string]any{"operation": tc.op, "arguments": tc.args, "id": tc.call,
			"call_id": "toolu_" + tc.call, "callback_url": rig.url(t, "thr_1", tc.call), "group_id": "thr_1"})
		if status, msg := post(t, rig.kitSrv.URL+InvokePath, string(body)); status != http.StatusOK {
			t.Fatalf("%s: %d %q, want 200", tc.call, status, msg)
		}
		m := rig.q.next(t)
		if m.Kind != runtime.KindToolResult || m.ToolCallID != tc.call || !strings.HasPrefix(m.Text, "error: ") || !strings.Contains(m.Text, tc.want) {
			t.Fatalf("%s: result %+v, want an error containing %q", tc.call, m, tc.want)
		}
	}
	if rig.runs.Load() != 0 {
		t.Fatal("the echo tool ran with bad arguments")
	}
}

// TestKitEchoesCallID: tool_result, oauth and user_choice carry the
// invocation's call_id (a MUST), and omit it when the invocation had none.
func TestKitEchoesCallID(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]any, 8)
	cbSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		got <- m
	}))
	t.Cleanup(cbSrv.Close)
	kit, err := NewServer(ServerConfig{Name: "t", Logger: quietLogger(), Retry: fastRetry(2), Tools: []Tool{{
		Name: "ask", Description: "asks then answers",
		Run: func(ctx context.Context, c *Call) error {
			if err := c.OAuth(ctx, "https://auth.example.com/a"); err != nil {
				return err
			}
			if err := c.Choice(ctx, "Which?", []string{"a"}, 0, "https://tool.example.com/answer"); err != nil {
				return err
			}
			return c.Result(ctx, "ok")
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(kit)
	t.Cleanup(func() { srv.Close(); kit.Stop() })
	for _, callID := range []any{"toolu_42", nil} {
		body, _ := json.Marshal(map[string]any{"operation": "ask", "arguments": map[string]any{}, "id": fmt.Sprint("c_", callID),
			"call_id": callID, "callback_url": cbSrv.URL + "/cb", "group_id": "thr_1"})
		if status, msg := post(t, srv.URL+InvokePath, string(body)); status != http.StatusOK {
			t.Fatalf("%d %q", status, msg)
		}
		for _, typ := range []string{"oauth", "user_choice", "tool_result"} {
			var m map[string]any
			select {
			case m = <-got:
			case <-time.After(waitTimeout):
				t.Fatalf("no %s callback", typ)
			}
			if m["type"] != typ || m["call_id"] != callID {
				t.Fatalf("callback %v: want type %s with call_id %v", m, typ, callID)
			}
		}
	}
}

// TestKitCancelAndStop: /cancel_tool_call and /close_thread cancel running
// calls (no result is posted for them), and Stop waits for every call.
func TestKitCancelAndStop(t *testing.T) {
	t.Parallel()
	started := make(chan string, 8)
	ended := make(chan string, 8)
	blocker := Tool{Name: "block", Description: "Blocks until cancelled.", Run: func(ctx context.Context, c *Call) error {
		started <- c.ID
		<-ctx.Done()
		ended <- c.ID
		return ctx.Err()
	}}
	rig := newToolRig(t, blocker)
	th := rootThread("thr_c")
	for _, call := range []string{"call_a", "call_b", "call_c"} {
		if err := rig.dispatch(t, th, call, "block", `{}`); err != nil {
			t.Fatal(err)
		}
		<-started
	}
	ts, _ := rig.loader.Toolset(context.Background(), th)
	e, _ := ts.Lookup("block")
	if err := e.Async.(runtime.Canceler).Cancel(context.Background(), "thr_c", "call_a"); err != nil {
		t.Fatal(err)
	}
	if id := waitFor(t, ended); id != "call_a" {
		t.Fatalf("cancelled %s, want call_a", id)
	}
	rig.loader.CloseThread("thr_c")
	rest := map[string]bool{waitFor(t, ended): true, waitFor(t, ended): true}
	if !rest["call_b"] || !rest["call_c"] {
		t.Fatalf("close_thread cancelled %v, want call_b and call_c", rest)
	}
	if err := rig.dispatch(t, th, "call_d", "block", `{}`); err != nil {
		t.Fatal(err)
	}
	<-started
	rig.kit.Stop() // cancels call_d and waits for it
	rig.kit.Stop() // safe twice
	if got := rig.kit.Running(); got != 0 {
		t.Fatalf("%d calls running after Stop", got)
	}
	select {
	case id := <-ended:
		if id != "call_d" {
			t.Fatalf("Stop ended %s, want call_d", id)
		}
	default:
		t.Fatal("Stop returned before the running call ended")
	}
	if n := rig.q.count(); n != 0 {
		t.Fatalf("%d callbacks posted for cancelled calls", n)
	}
	status, _ := post(t, rig.kitSrv.URL+InvokePath, `{"operation":"echo","arguments":{"text":"x"},"id":"c","call_id":null,"callback_url":"http://x.example.com/","group_id":"g"}`)
	if status != http.StatusServiceUnavailable {
		t.Fatalf("invoke after Stop: %d, want 503", status)
	}
}

func waitFor[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

// TestKitRetriesCallbacksOn5xx: the kit retries a callback POST the runtime
// answered 503, and stops at a 4xx.
func TestKitRetriesCallbacksOn5xx(t *testing.T) {
	t.Parallel()
	rig := newToolRig(t)
	var failures atomic.Int64
	failures.Store(2)
	var seen counter
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.inc()
		if failures.Add(-1) >= 0 {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		rig.rcv.ServeHTTP(w, r)
	}))
	t.Cleanup(flaky.Close)
	rig.signer.BaseURL = flaky.URL + "/rap/callback"
	if err := rig.dispatch(t, rootThread("thr_f"), "call_1", "echo", `{"text":"x"}`); err != nil {
		t.Fatal(err)
	}
	if m := rig.q.next(t); m.Text != "echo: x" {
		t.Fatalf("message = %+v", m)
	}
	if n := seen.get(); n != 3 {
		t.Fatalf("%d callback attempts, want 3 (two 503s, then accepted)", n)
	}
}

// TestKitMountedUnderPrefix: a kit server mounted under a path prefix (as
// `agentslice serve` mounts in-process tool servers) advertises an endpoint
// under that prefix.
func TestKitMountedUnderPrefix(t *testing.T) {
	t.Parallel()
	rig := newToolRig(t)
	mux := http.NewServeMux()
	mux.Handle("/tools/test/", rig.kit)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	l, err := NewLoader(LoaderConfig{Servers: []string{srv.URL + "/tools/test"}, Dispatcher: rig.disp, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := l.SetFor(context.Background(), "thr_p")
	e, ok := set.Lookup("echo")
	if !ok {
		t.Fatalf("echo not offered: %v", set.Problems())
	}
	if ep := e.Async.(*remoteTool).set.endpoint; ep != srv.URL+"/tools/test/invoke" {
		t.Fatalf("endpoint %s", ep)
	}
	if err := e.Async.Dispatch(context.Background(), runtime.Invocation{ThreadID: "thr_p", CallID: "c1", Name: "echo", Args: `{"text":"p"}`}); err != nil {
		t.Fatal(err)
	}
	if m := rig.q.next(t); m.Text != "echo: p" {
		t.Fatalf("message %+v", m)
	}
}

// TestKitToolCallStatus: /tool_call_status is authenticated like
// invocations, answers alive while a call runs and false for unknown or
// finished calls, and does not change the call.
func TestKitToolCallStatus(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	cbSrv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(cbSrv.Close)
	kit, err := NewServer(ServerConfig{Name: "t", Logger: quietLogger(), Retry: fastRetry(2),
		Authorize: func(r *http.Request) error {
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				return errors.New("missing or wrong bearer token")
			}
			return nil
		},
		Tools: []Tool{{Name: "wait", Description: "waits", Run: func(ctx context.Context, c *Call) error {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return c.Result(ctx, "done")
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(kit)
	t.Cleanup(func() { srv.Close(); kit.Stop() })
	do := func(path, body string, auth bool) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth {
			req.Header.Set("Authorization", "Bearer s3cret")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		return resp.StatusCode, strings.TrimSpace(b.String())
	}
	status := `{"thread_id":"thr_1","tool_call_id":"call_1"}`
	inv, _ := json.Marshal(Invocation{Operation: "wait", Arguments: json.RawMessage(`{}`), ID: "call_1",
		CallbackURL: cbSrv.URL, GroupID: "thr_1"})
	for _, p := range []string{InvokePath, ToolCallStatusPath, CancelToolCallPath, CloseThreadPath} {
		if code, _ := do(p, status, false); code != http.StatusUnauthorized {
			t.Fatalf("%s without credentials: %d, want 401", p, code)
		}
	}
	if code, body := do(ToolCallStatusPath, status, true); code != 200 || body != `{"alive":false}` {
		t.Fatalf("unknown call: %d %s", code, body)
	}
	if code, body := do(InvokePath, string(inv), true); code != 200 {
		t.Fatalf("invoke: %d %s", code, body)
	}
	<-started
	for range 2 { // read-only: asking twice changes nothing
		if code, body := do(ToolCallStatusPath, status, true); code != 200 || body != `{"alive":true}` {
			t.Fatalf("running call: %d %s", code, body)
		}
	}
	if code, _ := do(ToolCallStatusPath, `{"thread_id":"thr_1","tool_call_id":""}`, true); code != http.StatusBadRequest {
		t.Fatalf("empty tool_call_id: %d, want 400", code)
	}
	close(release)
	kit.Stop() // waits for the call to finish
	if code, body := do(ToolCallStatusPath, status, true); code != 200 || body != `{"alive":false}` {
		t.Fatalf("finished call: %d %s", code, body)
	}
}
