package rap

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
	"github.com/agentslice/agentslice/internal/testenv"
)

// argsModel calls the tool its user message names, with the JSON arguments
// after the name ("wait_for_url {...}"), and replies with the start of
// whatever came back.
type argsModel struct{}

func (argsModel) Complete(_ context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	last := req.History[len(req.History)-1]
	if last.Kind == runtime.ItemUser {
		name, args, _ := strings.Cut(last.Text, " ")
		w.ToolCall("", name, args)
		return nil
	}
	w.Text("tool said: " + last.Text[:min(len(last.Text), 300)])
	return nil
}

// typescriptExample returns the path of sdk/typescript's example tool
// server, skipping (or failing, with AGENTSLICE_REQUIRE_SERVICES=1) when node
// or the SDK's npm packages are missing.
func typescriptExample(t *testing.T) (node, script string) {
	t.Helper()
	node = testenv.Node(t)
	sdk, err := filepath.Abs(filepath.Join("..", "..", "sdk", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sdk, "node_modules", "ajv", "package.json")); err != nil {
		msg := "sdk/typescript's npm packages are not installed (run scripts/npm-deps.sh, or `npm ci` in sdk/typescript)"
		if os.Getenv(testenv.RequireVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, filepath.Join(sdk, "examples", "wait-for-url.js")
}

// TestTypeScriptSDKExample runs the embedded system (loader, dispatcher,
// signed callbacks, receiver, engine) against the TypeScript SDK's example
// tool server, run by node: the toolset loads whole, wait_for_url is
// acknowledged, polls a URL this test controls (alive in
// /tool_call_status meanwhile) and posts its result with a display segment
// and a view; a failing call reaches the model as an error result; watch_url's
// subscription sends inline events and a final one; a thread stopped while
// its call waits gets the call cancelled in node.
func TestTypeScriptSDKExample(t *testing.T) {
	node, script := typescriptExample(t)
	ts := &nodeToolServer{t: t, node: node, port: "0"}
	ts.startScript(script)
	t.Cleanup(ts.stop)

	// The URL the tools poll: 503 until up is set, then 200; every hit signals.
	var up atomic.Bool
	hits := make(chan string, 256)
	hangStarted, hangAborted, testDone := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" { // answers only when the test ends; signals when the client gives up
			hangStarted <- struct{}{}
			select {
			case <-r.Context().Done():
				hangAborted <- struct{}{}
			case <-testDone:
			}
			return
		}
		select {
		case hits <- r.URL.Path:
		default:
		}
		if up.Load() && r.URL.Path != "/never" {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(func() { close(testDone); target.Close() })

	rig := newCallbackRig(t, nil)
	loader := loaderFor(t, rig, ts.url())
	out := &eventLog{notify: make(chan struct{}, 1)}
	store := local.NewHistoryStore()
	sys, err := local.New(local.Config{Model: argsModel{}, Tools: loader, History: store, Output: out, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sys.Stop)
	rcv, err := NewReceiver(ReceiverConfig{Keys: rig.signer.Keys, Queue: sys, Output: out, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rig.srv.Config.Handler = rcv
	send := func(thread, kind, text string) {
		t.Helper()
		if err := sys.Send(context.Background(), runtime.Message{V: 1, ID: kind + "_" + thread, ThreadID: thread, Kind: runtime.Kind(kind), Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	alive := func(thread string) bool {
		t.Helper()
		th, err := store.Load(context.Background(), thread)
		if err != nil || th.State.Pending == nil {
			t.Fatalf("%s has no pending call (%v)", thread, err)
		}
		b, _ := json.Marshal(ToolCallStatus{ThreadID: thread, ToolCallID: th.State.Pending.ID})
		resp, err := http.Post(ts.url()+ToolCallStatusPath, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st ToolCallStatusResponse
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != 200 {
			t.Fatalf("tool_call_status: %d %v", resp.StatusCode, err)
		}
		return st.Alive
	}
	waitHit := func(path string) {
		t.Helper()
		deadline := time.After(waitTimeout)
		for {
			select {
			case p := <-hits:
				if p == path {
					return
				}
			case <-deadline:
				t.Fatalf("the tool never polled %s", path)
			}
		}
	}
	args := func(path string, extra string) string {
		return `{"url":"` + target.URL + path + `","interval_ms":10` + extra + `}`
	}

	set, err := loader.SetFor(context.Background(), "probe")
	if err != nil || len(set.Problems()) != 0 || len(set.Specs()) != 2 {
		t.Fatalf("toolset: %d tools, problems %v, %v", len(set.Specs()), set.Problems(), err)
	}

	// wait_for_url: acknowledged, alive while it polls, then its result.
	send("thr_wait", "user", "wait_for_url "+args("/up", ""))
	waitHit("/up")
	if !alive("thr_wait") {
		t.Fatal("tool_call_status says a polling call is dead")
	}
	up.Store(true)
	out.waitFor(t, "wait_for_url's reply", replyOf("thr_wait", "answered 200 after"))
	out.waitFor(t, "wait_for_url's display", func(ev runtime.OutputEvent) bool {
		return ev.ThreadID == "thr_wait" && ev.Kind == "display" && strings.Contains(ev.Text, "is up")
	})
	if v, ok, _ := rcv.Views().View(context.Background(), "thr_wait", "wait_for_url"); !ok || !strings.Contains(string(v), `"status":200`) {
		t.Fatalf("the progress view is %s (stored %v)", v, ok)
	}

	// A handler that throws: the model gets the error as the call's result.
	send("thr_fail", "user", "wait_for_url "+args("/never", `,"max_attempts":2`))
	out.waitFor(t, "the failing call's reply", replyOf("thr_fail", "error: "+target.URL+"/never did not answer 200 in 2 attempts"))

	// watch_url: a subscription whose events go inline, the last final.
	send("thr_watch", "user", "watch_url "+args("/up", ""))
	out.waitFor(t, "watch_url's reply", replyOf("thr_watch", "Watching "))
	deadline := time.After(4 * waitTimeout)
	for {
		th, err := store.Load(context.Background(), "thr_watch")
		if err != nil {
			t.Fatal(err)
		}
		if tr := runtimetest.Transcript(th.Items); strings.Contains(tr, "answered 200 (attempt") && len(th.State.Subscriptions) == 0 {
			break
		}
		select {
		case <-out.notify:
		case <-deadline:
			t.Fatalf("the subscription did not end with its final event:\n%s", runtimetest.Transcript(th.Items))
		}
	}

	// A thread stopped while its call waits on a URL that never answers: the
	// runtime's cancel_tool_call aborts the handler's signal, which aborts
	// its fetch (the request's context here ends long before the example's
	// own 10s fetch timeout would end it).
	send("thr_stop", "user", "wait_for_url "+args("/hang", ""))
	select {
	case <-hangStarted:
	case <-time.After(waitTimeout):
		t.Fatal("the tool never fetched /hang")
	}
	if !alive("thr_stop") {
		t.Fatal("the call to be stopped is not alive")
	}
	th, _ := store.Load(context.Background(), "thr_stop")
	callID := th.State.Pending.ID
	send("thr_stop", string(runtime.KindStop), "")
	select {
	case <-hangAborted:
	case <-time.After(waitTimeout / 2):
		t.Fatal("the stopped call's fetch was not aborted: cancel_tool_call did not reach its handler")
	}
	b, _ := json.Marshal(ToolCallStatus{ThreadID: "thr_stop", ToolCallID: callID})
	// The handler ends right after its fetch was aborted: ask until node
	// says the call is gone.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline = time.After(waitTimeout)
	for {
		resp, err := http.Post(ts.url()+ToolCallStatusPath, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var st ToolCallStatusResponse
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if !st.Alive {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("the stopped call is still alive in node")
		}
	}

	for _, thread := range []string{"thr_wait", "thr_fail", "thr_watch", "thr_stop"} {
		th, err := store.Load(context.Background(), thread)
		if err != nil {
			t.Fatal(err)
		}
		if err := runtimetest.CheckOneResultPerCall(th.Items); err != nil {
			t.Fatalf("%s: %v\n%s", thread, err, runtimetest.Transcript(th.Items))
		}
	}
	if dead, n := sys.DeadLetters(); n != 0 {
		t.Fatalf("dead letters: %+v", dead)
	}
}

// startScript starts node running script (which prints "LISTENING <port>")
// in place of the spec server.
func (s *nodeToolServer) startScript(script string) {
	s.t.Helper()
	s.script = script
	s.start()
}
