package server

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/tools"
	"github.com/agentslice/agentslice/internal/runtime"
)

// noon is the clock of the kit server in TestServeKitTool.
var noon = time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC)

// TestServeKitTool: the scripted model calls get_time on a RAP server built
// with the kit (its own HTTP server, configured as a tool server); the
// result comes back through the signed callback URL; the next slice
// completes with the model's reply, seen on the event stream and in the
// thread's history.
func TestServeKitTool(t *testing.T) {
	t.Parallel()
	kit, err := rap.NewServer(rap.ServerConfig{Name: "clock", Tools: []rap.Tool{tools.GetTime(func() time.Time { return noon })}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	kitSrv := httptest.NewServer(kit)
	t.Cleanup(func() { kitSrv.Close(); kit.Stop() })

	srv := startServer(t, Config{Script: testdata(t, "get_time_script.json"), ToolServers: []string{kitSrv.URL},
		Freeze: Freeze{Every: "1h", Idle: "1ns"}})
	const thread = "thr_clock"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")

	if got := postMessage(t, srv, thread, `{"text":"What time is it?","id":"m_1"}`); got.ID != "m_1" || got.ThreadID != thread {
		t.Fatalf("POST answered %+v", got)
	}
	ev := events.nextOf(t, "reply")
	if ev.Event != "reply" || ev.Data.Kind != "reply" || ev.Data.ThreadID != thread || ev.Data.Text != "It is noon, UTC." {
		t.Fatalf("first event = %+v, want the reply of the second slice", ev)
	}
	waitIdle(t, srv) // the slice clears its sent outbox with one more commit after publishing

	th := getThread(t, srv, thread)
	want := []runtime.ItemKind{runtime.ItemUser, runtime.ItemAssistant, runtime.ItemToolCall, runtime.ItemToolResult, runtime.ItemAssistant}
	if len(th.Items) != len(want) {
		t.Fatalf("history is %s, want 5 items", kinds(th.Items))
	}
	for i, k := range want {
		if th.Items[i].Kind != k {
			t.Fatalf("history is %s", kinds(th.Items))
		}
	}
	call, result := th.Items[2], th.Items[3]
	if call.Name != "get_time" || result.CallID != call.CallID || result.Text != tools.FormatTime(noon, "UTC") {
		t.Fatalf("call %+v, result %+v", call, result)
	}
	// The result came through the receiver: its message ID is the one the
	// receiver derives for a tool_result of that call.
	if result.Input != runtime.DeriveID("res_", thread, call.CallID) {
		t.Fatalf("result consumed message %q, not the callback's", result.Input)
	}
	if th.Status != "idle" || th.State.Pending != nil || th.Items[0].Input != "m_1" {
		t.Fatalf("status %q, state %+v, first item %+v", th.Status, th.State, th.Items[0])
	}

	// The same message ID again is accepted and processed once.
	postMessage(t, srv, thread, `{"text":"What time is it?","id":"m_1"}`)
	waitIdle(t, srv)
	if again := getThread(t, srv, thread); again.State.Version != th.State.Version || len(again.Items) != len(th.Items) {
		t.Fatalf("a repeated message ID changed the thread: version %d -> %d", th.State.Version, again.State.Version)
	}

	// Frozen history reads back the same.
	if n := srv.freezeOnce(); n < 1 {
		t.Fatalf("freezeOnce froze %d threads, want at least 1", n)
	}
	if frozen := getThread(t, srv, thread); len(frozen.Items) != len(th.Items) || frozen.Items[3].Text != result.Text {
		t.Fatalf("history after freezing: %s", kinds(frozen.Items))
	}

	var tree treeResponse
	do(t, "GET", srv.URL()+"/threads", "", &tree)
	if tree.Count != 1 || len(tree.Threads) != 1 || tree.Threads[0].ID != thread || tree.Threads[0].Length != 5 {
		t.Fatalf("tree = %+v", tree)
	}
	if dead, n := srv.System().DeadLetters(); n != 0 {
		t.Fatalf("dead letters: %+v", dead)
	}
}

// TestServeRunCommand: the scripted model calls run_command (served
// in-process under /tools/examples); the command's output and exit code
// come back as associative subscription events through the signed
// callback, each waking the model, until the final event ends the
// subscription.
func TestServeRunCommand(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Script: testdata(t, "run_command_script.json"),
		ExampleTools: &ExampleTools{RunCommand: &RunCommand{Allow: []string{"echo"}}}})
	const thread = "thr_cmd"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Say hello with echo."}`)

	// Replies come as the events wake the model; stop once the final
	// event is in history and the model has answered after it.
	var th threadResponse
	for done := false; !done; {
		ev := events.nextOf(t, "reply")
		if ev.Event != "reply" {
			t.Fatalf("event %+v, want replies only", ev)
		}
		th = getThread(t, srv, thread)
		exit := slices.IndexFunc(th.Items, func(it runtime.Item) bool {
			return it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName && it.Text == "exit code 0"
		})
		done = exit >= 0 && slices.ContainsFunc(th.Items[exit:], func(it runtime.Item) bool { return it.Kind == runtime.ItemAssistant })
	}
	waitIdle(t, srv)
	th = getThread(t, srv, thread)
	var call runtime.Item
	var output, started bool
	for _, it := range th.Items {
		switch {
		case it.Kind == runtime.ItemToolCall && it.Name == "run_command":
			call = it
		case it.Kind == runtime.ItemToolResult && it.Name == "run_command":
			started = strings.HasPrefix(it.Text, "started echo")
		case it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName && strings.Contains(it.Text, "hello from run_command"):
			output = true
		}
	}
	if call.CallID == "" || !started || !output {
		t.Fatalf("history %s lacks the call, its subscription result or the output event", kinds(th.Items))
	}
	// The injected events name the subscribing call.
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolCall && it.Name == runtime.InjectedToolName && !strings.Contains(it.Args, call.CallID) {
			t.Fatalf("injected call %s does not name %s", it.Args, call.CallID)
		}
	}
	if len(th.State.Subscriptions) != 0 || th.Status != "idle" {
		t.Fatalf("after the final event: status %q, subscriptions %+v", th.Status, th.State.Subscriptions)
	}
	if dead, n := srv.System().DeadLetters(); n != 0 {
		t.Fatalf("dead letters: %+v", dead)
	}
}

// TestServeMCP: the scripted model calls a tool of the MCP reference server
// through the proxy (a subprocess over stdio, mounted under
// /tools/mcp/everything); the result returns through the signed callback.
func TestServeMCP(t *testing.T) {
	t.Parallel()
	everything := everythingServer(t)
	srv := startServer(t, Config{Script: testdata(t, "mcp_script.json"),
		MCPServers: []MCPServer{{Name: "everything", Command: []string{"node", everything, "stdio"}}}})
	const thread = "thr_mcp"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Echo something through MCP."}`)
	if ev := events.nextOf(t, "reply"); ev.Event != "reply" || ev.Data.Text != "The MCP server echoed it." {
		t.Fatalf("event %+v, want the final reply", ev)
	}
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	i := slices.IndexFunc(th.Items, func(it runtime.Item) bool {
		return it.Kind == runtime.ItemToolResult && it.Name == "everything__echo"
	})
	if i < 0 {
		t.Fatalf("no MCP result in %s", kinds(th.Items))
	}
	text := th.Items[i].Text
	for _, c := range th.Items[i].Content {
		text += c.Text
	}
	if text != "Echo: hello over MCP" || th.Items[i].IsError {
		t.Fatalf("MCP result %+v", th.Items[i])
	}
	if dead, n := srv.System().DeadLetters(); n != 0 {
		t.Fatalf("dead letters: %+v", dead)
	}
}
