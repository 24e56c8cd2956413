package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentslice/agentslice/client"
)

// commandViewEvent is a "view" event of the sandbox's command view.
func commandViewEvent(t *testing.T, cv commandView) client.Event {
	t.Helper()
	content, err := json.Marshal(cv)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := json.Marshal(map[string]any{"view_type": commandViewType, "content": json.RawMessage(content)})
	return client.Event{Kind: "view", Text: string(text)}
}

// TestRunningCommandShowsItsViewsLive: a background command's views show
// its newest output under its folded line while it runs (its "started"
// result does not make it done), a view told twice (live, then from
// history) shows once, a line split across batches is joined, skipped
// bytes are said, escape sequences are dropped; its last view ends it
// (failed on a non-zero exit), and the final event is its result, not
// more output.
func TestRunningCommandShowsItsViewsLive(t *testing.T) {
	m := newTestModel(t)
	const log = "/data/logs/c2.log"
	feed(m, client.Event{Kind: "message", Text: "build it"}, state("running"),
		client.Event{Kind: "tool_call", Tool: "run_command", CallID: "c2", Args: `{"command":"make"}`},
		client.Event{Kind: "tool_result", Tool: "run_command", CallID: "c2", Text: "started command c2 in the background: make"},
		client.Event{Kind: "turn", Text: "It builds."}, state("idle"))
	first := commandView{CommandID: "c2", Command: "make", State: "running", Output: "cc a.c\ncc b\x1b[31m.c", Offset: 0, Log: log}
	feed(m, commandViewEvent(t, first), commandViewEvent(t, first),
		commandViewEvent(t, commandView{CommandID: "c2", State: "running", Output: "\ncc c.c\n", Offset: int64(len(first.Output)), Log: log}))
	s := trimLines(screen(t, m))
	if !strings.Contains(s, `▸ run_command [running] {"command":"make"}`) || !strings.Contains(s, "    cc a.c\n    cc b.c\n    cc c.c") {
		t.Fatalf("a running command's live output:\n%s", s)
	}
	if strings.Count(s, "cc a.c") != 1 {
		t.Fatalf("a view told twice shows twice:\n%s", s)
	}
	feed(m, commandViewEvent(t, commandView{CommandID: "c2", State: "running", Output: "ld app\n", Offset: 126, Log: log}))
	if s := screen(t, m); !strings.Contains(s, "… 100 bytes not shown (the full log: "+log+")") || !strings.Contains(s, "    ld app") {
		t.Fatalf("skipped output:\n%s", s)
	}
	for i := 0; i < 10; i++ {
		feed(m, commandViewEvent(t, commandView{CommandID: "c2", State: "running", Output: "step\n", Offset: 133 + int64(5*i), Log: log}))
	}
	if s := screen(t, m); strings.Contains(s, "ld app") || strings.Count(s, "    step") != liveTailLines {
		t.Fatalf("the live tail is not its newest %d lines:\n%s", liveTailLines, s)
	}
	feed(m, commandViewEvent(t, commandView{CommandID: "c2", State: "exited", Status: "exit code 2", Output: "error\n", Offset: 183, Log: log}),
		client.Event{Kind: "subscription_event", Tool: "run_command", CallID: "c2", Text: "command c2 finished: exit code 2 after 3s: make"})
	s = screen(t, m)
	if !strings.Contains(s, `▸ run_command [failed] {"command":"make"} → exit code 2`) || strings.Contains(s, "    step") {
		t.Fatalf("a command that ended:\n%s", s)
	}
	e := &m.conv.Entries[m.conv.calls["c2"]]
	if e.Result != "command c2 finished: exit code 2 after 3s: make" || e.Output[len(e.Output)-1] != "error" {
		t.Fatalf("the ended command's entry: result %q, output %q", e.Result, e.Output)
	}
	// A view of a command the screen does not show, or of another type, changes nothing.
	before := len(m.conv.Entries)
	feed(m, commandViewEvent(t, commandView{CommandID: "other", State: "running", Output: "x\n"}),
		client.Event{Kind: "view", Text: `{"view_type":"diff","content":{"patch":"x"}}`}, client.Event{Kind: "view", Text: "not json"})
	if len(m.conv.Entries) != before {
		t.Fatalf("stray views added entries")
	}
}

// TestTerminalLine: a command's output cannot move the cursor.
func TestTerminalLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                 "plain",
		"\x1b[1;32mok\x1b[0m":   "ok",
		"10%\r50%\r100%":        "100%",
		"tab\there\x07\x1b[2J!": "tab here!",
		"trailing cr\r":         "trailing cr",
		"\x1b]0;title\x07after": "after",
	} {
		if got := terminalLine(in); got != want {
			t.Errorf("terminalLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// trimLines drops the spaces a screen pads its lines with.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// TestWarningShowsAboveTheConversation: a warning of the command (the
// server serves another repository) is on the screen, wrapped to it,
// before the conversation and after a switch to another thread.
func TestWarningShowsAboveTheConversation(t *testing.T) {
	m := New(context.Background(), Options{Thread: "t1", Repo: "/src/demo", Warning: "the server at http://127.0.0.1:1 serves the sandbox of /src/other, not /src/demo"})
	m.Update(tea.WindowSizeMsg{Width: 60, Height: 24})
	feed(m, client.Event{Kind: "message", Text: "hello"})
	s := trimLines(screen(t, m))
	if !strings.Contains(s, "! warning: the server at http://127.0.0.1:1 serves the\nsandbox of /src/other, not /src/demo\n\nyou: hello") {
		t.Fatalf("the warning:\n%s", s)
	}
	m.switchThread("t2")
	if s := screen(t, m); !strings.Contains(s, "! warning: the server") {
		t.Fatalf("the warning after a switch:\n%s", s)
	}
}

// TestCancelledCommandEnds: a running command whose subscription the
// thread no longer holds (cancelled, stopped) shows as ended, not running
// for ever, even when its stale running view is told again.
func TestCancelledCommandEnds(t *testing.T) {
	m := newTestModel(t)
	feed(m, client.Event{Kind: "tool_call", Tool: "run_command", CallID: "c2", Args: `{"command":"make"}`},
		client.Event{Kind: "tool_result", Tool: "run_command", CallID: "c2", Text: "started"})
	running := commandViewEvent(t, commandView{CommandID: "c2", State: "running", Output: "cc a.c\n"})
	feed(m, running)
	m.conv.SetSubscriptions(nil) // not yet held (the result not folded): still running
	m.conv.SetSubscriptions([]string{"c2"})
	if s := screen(t, m); !strings.Contains(s, "▸ run_command [running]") {
		t.Fatalf("while held:\n%s", s)
	}
	m.conv.SetSubscriptions(nil)
	feed(m, running)
	if s := screen(t, m); !strings.Contains(s, `▸ run_command [done] {"command":"make"} → ended without its exit status`) {
		t.Fatalf("after its subscription ended:\n%s", s)
	}
}
