package server

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// freeAddr returns a loopback address nothing listens on, so a restarted
// server gets the address its callback URLs name.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// waitStatus polls the thread until its status is want.
func waitThreadStatus(t *testing.T, srv *Server, thread, want string) threadResponse {
	t.Helper()
	deadline := timeoutC()
	for {
		var th threadResponse
		if code := do(t, http.MethodGet, srv.URL()+"/threads/"+thread, "", &th); code == http.StatusOK && th.Status == want {
			return th
		}
		select {
		case <-deadline:
			t.Fatalf("thread %s never became %s (last: %s)", thread, want, getThread(t, srv, thread).Status)
		case <-time.After(5 * time.Millisecond): // polling the API, not timing behaviour
		}
	}
}

// TestHumanStateSurvivesRestart: a pending user_choice, a view and a
// result's display segment are in the thread's history, so after a clean
// restart on the same data directory the thread still waits for the
// choice, the view and the display are visible through the API, and the
// choice answered after the restart reaches the tool, whose result then
// ends the turn.
func TestHumanStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	wb := newWorkbench(t)
	cfg := Config{Script: writeScript(t, workbenchScript), ToolServers: []string{wb.url}, Data: t.TempDir(), Listen: freeAddr(t)}
	const thread = "thr_restart"
	first := startServer(t, cfg)
	postMessage(t, first, thread, `{"text":"Fix main.go","id":"m1"}`)
	waitThreadStatus(t, first, thread, "waiting_for_choice")
	first.Stop()

	second := startServer(t, cfg)
	th := waitThreadStatus(t, second, thread, "waiting_for_choice")
	if th.Choice == nil || th.Choice.Prompt != "Which colour?" || len(th.Choice.Choices) != 2 {
		t.Fatalf("after the restart the choice is %+v", th.Choice)
	}
	var views viewsResponse
	if code := do(t, http.MethodGet, second.URL()+"/threads/"+thread+"/views", "", &views); code != http.StatusOK || string(views.Views["files"]) != `{"open":["main.go"]}` {
		t.Fatalf("views after the restart: %d %+v", code, views)
	}
	events := openStream(t, second.URL()+"/threads/"+thread+"/events")
	seen := map[string]StreamEvent{}
	for len(seen) < 2 { // the view is committed before or after the result, as the tool's posts arrive
		ev := events.nextOf(t, "tool_result", "view")
		seen[ev.Event] = ev.Data
	}
	events.close()
	if res := seen["tool_result"]; res.Tool != "edit_file" || len(res.Display) != 1 || res.Display[0].Type != "diff" || res.Display[0].Path != "main.go" {
		t.Fatalf("the result's display after the restart: %+v", res)
	}
	if v := seen["view"]; v.Text != `{"view_type":"files","content":{"open":["main.go"]}}` || v.At == 0 {
		t.Fatalf("view event after the restart: %+v", v)
	}

	var ok map[string]any
	if code := do(t, http.MethodPost, second.URL()+"/threads/"+thread+"/choices/"+th.Choice.CallID, `{"selected": 1}`, &ok); code != http.StatusOK {
		t.Fatalf("answering after the restart: %d %v", code, ok)
	}
	deadline := timeoutC()
	for { // the answer's record may be committed before or after the result
		done := waitThreadStatus(t, second, thread, "idle")
		var answered, result bool
		reply := ""
		for _, it := range done.Items {
			if it.Kind == runtime.ItemAssistant {
				reply = it.Text
			}
			answered = answered || (it.Kind == runtime.ItemMarker && it.Name == runtime.AnswerMarkerName && it.CallID == th.Choice.CallID)
			result = result || (it.Kind == runtime.ItemToolResult && it.CallID == th.Choice.CallID && it.Text == "the user chose 1")
		}
		if answered && result && reply == "All done, green it is." {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("answer recorded %v, the tool's result %v: %s", answered, result, kinds(done.Items))
		case <-time.After(5 * time.Millisecond):
		}
	}
	if code := do(t, http.MethodPost, second.URL()+"/threads/"+thread+"/choices/"+th.Choice.CallID, `{"selected": 0}`, nil); code != http.StatusNotFound {
		t.Fatalf("a second answer: %d, want 404", code)
	}
}

// TestItemsCarryTimes: every item of a thread, as the API shows it, has
// the time its commit (or, for a result, its arrival) read from the
// engine's clock, and so does every event of the stream; a call's time
// is before its result's. (Times need not
// grow along history: a result that arrived while the slice before it
// was still committing is older than that slice's items.)
func TestItemsCarryTimes(t *testing.T) {
	t.Parallel()
	wb := newWorkbench(t)
	srv := startServer(t, Config{Script: writeScript(t, workbenchScript), ToolServers: []string{wb.url}})
	before := runtime.StampOf(time.Now())
	events := openStream(t, srv.URL()+"/threads/thr_times/events")
	postMessage(t, srv, "thr_times", `{"text":"Fix main.go"}`)
	th := waitThreadStatus(t, srv, "thr_times", "waiting_for_choice")
	after := runtime.StampOf(time.Now())
	for _, kind := range []string{"message", "state", "delta"} { // history and live events alike
		if ev := events.nextOf(t, kind); ev.Data.At < before || ev.Data.At > after {
			t.Fatalf("%s event at %d, outside [%d, %d]", kind, ev.Data.At, before, after)
		}
	}
	events.close()
	calls := map[string]runtime.Stamp{}
	for i, it := range th.Items {
		if it.At < before || it.At > after {
			t.Fatalf("item %d (%s) at %d, outside [%d, %d]", i, it.Kind, it.At, before, after)
		}
		switch it.Kind {
		case runtime.ItemToolCall:
			calls[it.CallID] = it.At
		case runtime.ItemToolResult:
			if at, ok := calls[it.CallID]; !ok || it.At < at {
				t.Fatalf("result of %s at %d, its call at %d (found %v)", it.CallID, it.At, at, ok)
			}
		}
	}
	if len(th.Items) < 6 {
		t.Fatalf("only %d items", len(th.Items))
	}
	var raw struct {
		Items []map[string]any `json:"items"`
	}
	do(t, http.MethodGet, srv.URL()+"/threads/thr_times", "", &raw)
	at, _ := raw.Items[0]["at"].(string)
	if parsed, err := time.Parse(time.RFC3339, at); err != nil || runtime.StampOf(parsed) != th.Items[0].At {
		t.Fatalf("items[0].at in JSON is %q (%v), want an RFC 3339 time", at, err)
	}
}
