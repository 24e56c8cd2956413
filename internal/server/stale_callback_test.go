package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// holdingTool is a RAP tool server (a real HTTP server) with one tool,
// hold, that accepts every invocation and never answers by itself: the
// test answers through the callback URLs it hands over.
func holdingTool(t *testing.T) (string, <-chan rap.Invocation) {
	t.Helper()
	got := make(chan rap.Invocation, 16)
	return holdingServer(t, func(inv rap.Invocation, _ *http.Request) { got <- inv }), got
}

// holdingServer is holdingTool's server, handing each invocation (and its
// request) to onInvoke.
func holdingServer(t *testing.T, onInvoke func(rap.Invocation, *http.Request)) string {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/rap-toolset":
			_ = json.NewEncoder(w).Encode(rap.Toolset{Name: "holder", Endpoint: srv.URL + "/invoke",
				Tools: []rap.ToolDef{{Name: "hold", Description: "Holds the call until someone answers.", InputSchema: json.RawMessage(`{"type":"object"}`)}}})
		case "/invoke":
			var inv rap.Invocation
			if err := json.NewDecoder(r.Body).Decode(&inv); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			onInvoke(inv, r)
			_, _ = w.Write([]byte(`{}`))
		case "/tool_call_status":
			_, _ = w.Write([]byte(`{"alive":true}`))
		default:
			_, _ = w.Write([]byte(`{}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func nextInvocation(t *testing.T, got <-chan rap.Invocation) rap.Invocation {
	t.Helper()
	select {
	case inv := <-got:
		return inv
	case <-time.After(timeout):
		t.Fatal("no invocation reached the tool")
		return rap.Invocation{}
	}
}

// postCallback POSTs a tool_result to a callback URL, sent to srv (the
// capability is the URL's query; where it was first served does not
// matter), and returns the status.
func postCallback(t *testing.T, srv *Server, callbackURL, thread, call, text string) int {
	t.Helper()
	u, err := url.Parse(callbackURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{"type": "tool_result", "group_id": thread, "id": call, "text": text})
	resp, err := http.Post(srv.URL()+u.Path+"?"+u.RawQuery, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestStaleCallbackOfARecreatedThreadIsRefused replays the stale-callback
// attack: conversation 1 on thread "demo" hands a tool a callback URL; the
// store is wiped (a memory store restarted with the same keys); conversation
// 2 on "demo" calls the tool again. Its call gets another ID, and the old
// URL is refused with 403, its result reaching no history; the new URL
// still works.
func TestStaleCallbackOfARecreatedThreadIsRefused(t *testing.T) {
	t.Parallel()
	base, invocations := holdingTool(t)
	cfg := Config{Store: "memory", Script: testdata(t, "hold_script.json"), ToolServers: []string{base},
		CallbackKeys: "k1:c2FtZS1rZXlzLWFjcm9zcy1ib3RoLWNvbnZlcnNhdGlvbnMtIQ"}
	const thread = "demo"

	first := startServer(t, cfg)
	postMessage(t, first, thread, `{"text":"start the job","id":"m1"}`)
	stale := nextInvocation(t, invocations)
	first.Stop()

	second := startServer(t, cfg)
	events := openStream(t, second.URL()+"/threads/"+thread+"/events")
	postMessage(t, second, thread, `{"text":"start the job","id":"m1"}`) // the same message, even
	fresh := nextInvocation(t, invocations)
	for !strings.HasPrefix(fresh.CallbackURL, second.URL()) { // a late retry of the first server's dispatch
		fresh = nextInvocation(t, invocations)
	}
	if fresh.ID == stale.ID {
		t.Fatalf("both conversations on thread %s issued call ID %s", thread, fresh.ID)
	}

	if code := postCallback(t, second, stale.CallbackURL, thread, stale.ID, "STALE RESULT"); code != http.StatusForbidden {
		t.Fatalf("the stale callback URL was answered %d, want 403", code)
	}
	// Naming the new call in the body does not help: the URL is signed for the old one.
	if code := postCallback(t, second, stale.CallbackURL, thread, fresh.ID, "STALE RESULT"); code != http.StatusForbidden {
		t.Fatalf("the stale callback URL naming the new call was answered %d, want 403", code)
	}
	if code := postCallback(t, second, fresh.CallbackURL, thread, fresh.ID, "fresh result"); code != http.StatusOK {
		t.Fatalf("the current callback URL was answered %d, want 200", code)
	}
	if ev := events.nextOf(t, "reply"); ev.Data.Text != "The tool answered." {
		t.Fatalf("event %+v, want the final reply", ev)
	}
	waitIdle(t, second)
	th := getThread(t, second, thread)
	all, _ := json.Marshal(th.Items)
	if strings.Contains(string(all), "STALE RESULT") || !strings.Contains(string(all), "fresh result") {
		t.Fatalf("history %s:\n%s", kinds(th.Items), all)
	}
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult && it.CallID != fresh.ID {
			t.Fatalf("a result for call %s in history: %+v", it.CallID, it)
		}
	}
}
