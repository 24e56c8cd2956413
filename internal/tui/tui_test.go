package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/agentslice/agentslice/client"
)

// These tests drive the model as bubbletea would, one message at a time,
// with no terminal and no server (Options.Client is nil, so no command
// runs): the state machine and the screen are plain functions.

func newTestModel(t *testing.T) *Model {
	t.Helper()
	m := New(context.Background(), Options{Thread: "t1", Agent: "coder", Repo: "/src/demo", Title: "agentslice code"})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	return m
}

func feed(m *Model, evs ...client.Event) {
	for _, ev := range evs {
		m.Update(eventMsg{gen: m.gen, ev: ev})
	}
}

func state(s string) client.Event {
	return client.Event{Kind: "state", State: &client.StateChange{Status: s}}
}

func key(m *Model, keys ...tea.KeyMsg) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(k)
	}
	return cmd
}

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// screen is the view as a terminal shows it: checked to fit.
func screen(t *testing.T, m *Model) string {
	t.Helper()
	v := m.View()
	lines := strings.Split(v, "\n")
	if len(lines) != m.height {
		t.Fatalf("the view has %d lines on a %d-line terminal:\n%s", len(lines), m.height, v)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w > m.width {
			t.Fatalf("line %d is %d wide on a %d-column terminal: %q", i, w, m.width, l)
		}
	}
	return ansi.Strip(v)
}

// TestStreamingThenTurn: deltas show as they arrive, marked as streaming;
// the committed turn replaces them; a restarted completion starts over.
func TestStreamingThenTurn(t *testing.T) {
	m := newTestModel(t)
	feed(m, client.Event{Kind: "message", Text: "hello there"}, state("running"),
		client.Event{Kind: "delta", CompletionID: "c1", Index: 0, Text: "Hel"},
		client.Event{Kind: "delta", CompletionID: "c1", Index: 1, Text: "lo, wor"})
	s := screen(t, m)
	if !strings.Contains(s, "you: hello there") || !strings.Contains(s, "Hello, wor▍") || !strings.Contains(s, "● streaming") {
		t.Fatalf("while streaming:\n%s", s)
	}
	feed(m, client.Event{Kind: "delta", CompletionID: "c1", Index: 0, Text: "Hi"}) // a retried attempt
	if s := screen(t, m); strings.Contains(s, "Hello") || !strings.Contains(s, "Hi▍") {
		t.Fatalf("a restarted completion keeps the old text:\n%s", s)
	}
	feed(m, client.Event{Kind: "turn", Text: "Hi, world."}, state("idle"))
	s = screen(t, m)
	if !strings.Contains(s, "Hi, world.") || strings.Contains(s, "▍") || !strings.Contains(s, "● idle") {
		t.Fatalf("after the turn:\n%s", s)
	}
	if n := len(m.conv.Entries); n != 2 {
		t.Fatalf("%d entries, want the message and the turn: %+v", n, m.conv.Entries)
	}
}

// TestToolCallsFoldAndExpand: a call is one line with its status
// (running, done, failed); Tab selects one and Enter expands it.
func TestToolCallsFoldAndExpand(t *testing.T) {
	m := newTestModel(t)
	feed(m, client.Event{Kind: "message", Text: "fix it"}, state("running"),
		client.Event{Kind: "turn", Text: "Looking."},
		client.Event{Kind: "tool_call", Tool: "read_file", CallID: "c1", Args: `{"path":"a.go"}`}, state("waiting_for_tool"))
	s := screen(t, m)
	if !strings.Contains(s, `▸ read_file [running] {"path":"a.go"}`) || !strings.Contains(s, "● waiting on read_file") {
		t.Fatalf("a pending call:\n%s", s)
	}
	feed(m, client.Event{Kind: "tool_result", Tool: "read_file", CallID: "c1", Text: "package a\nfunc A() {}"},
		client.Event{Kind: "tool_call", Tool: "run_command", CallID: "c2", Args: `{"command":"go test"}`},
		client.Event{Kind: "subscription_event", Tool: "run_command", CallID: "c2", Text: "=== RUN TestA\n--- FAIL: TestA"})
	s = screen(t, m)
	if !strings.Contains(s, `▸ read_file [done] {"path":"a.go"} → package a func A() {}`) || !strings.Contains(s, "▸ run_command [running] --- FAIL: TestA") {
		t.Fatalf("a done call and a running one with its live output:\n%s", s)
	}
	feed(m, client.Event{Kind: "tool_call", Tool: "watch", CallID: "c3", Args: `{}`},
		client.Event{Kind: "tool_result", Tool: "watch", CallID: "c3", Text: "started; output follows as events"},
		client.Event{Kind: "subscription_event", Tool: "watch", CallID: "c3", Text: "line 1\nline 2"},
		client.Event{Kind: "subscription_event", Tool: "watch", CallID: "c3", Text: "exit code 0"})
	if s := screen(t, m); !strings.Contains(s, "▸ watch [done] {} → exit code 0") {
		t.Fatalf("a streaming tool's latest output:\n%s", s)
	}
	feed(m, client.Event{Kind: "tool_result", Tool: "run_command", CallID: "c2", Text: "exit status 1", IsError: true}, state("idle"))
	if s := screen(t, m); !strings.Contains(s, "▸ run_command [failed]") {
		t.Fatalf("a failed call:\n%s", s)
	}
	if strings.Contains(s, "args:") {
		t.Fatalf("folded calls show their details:\n%s", s)
	}
	key(m, tea.KeyMsg{Type: tea.KeyTab}, tea.KeyMsg{Type: tea.KeyShiftTab}, tea.KeyMsg{Type: tea.KeyShiftTab}, tea.KeyMsg{Type: tea.KeyEnter}) // the last call, then back to the first
	s = screen(t, m)
	if !strings.Contains(s, "▾ read_file [done]") || !strings.Contains(s, "  result:") || !strings.Contains(s, "    func A() {}") {
		t.Fatalf("the expanded call:\n%s", s)
	}
	if !strings.Contains(s, "▸ run_command [failed]") {
		t.Fatalf("expanding one call expanded another:\n%s", s)
	}
	key(m, tea.KeyMsg{Type: tea.KeyEnter})
	if s := screen(t, m); strings.Contains(s, "result:") {
		t.Fatalf("Enter again does not fold the call:\n%s", s)
	}
}

// TestChoiceWithArrowKeys: a pending user_choice shows its options; the
// arrows move the selection, Enter answers the selected one.
func TestChoiceWithArrowKeys(t *testing.T) {
	m := newTestModel(t)
	feed(m, client.Event{Kind: "message", Text: "paint it"},
		client.Event{Kind: "tool_call", Tool: "ask", CallID: "c9", Args: "{}"},
		client.Event{Kind: "user_choice", CallID: "c9", Choice: &client.Choice{CallID: "c9", Prompt: "Which colour?", Choices: []string{"red", "green", "blue"}}},
		state("waiting_for_choice"))
	s := screen(t, m)
	if !strings.Contains(s, "? Which colour?") || !strings.Contains(s, "› 1. red") || !strings.Contains(s, "▸ ask [waiting]") {
		t.Fatalf("the choice:\n%s", s)
	}
	key(m, tea.KeyMsg{Type: tea.KeyDown}, tea.KeyMsg{Type: tea.KeyDown}, tea.KeyMsg{Type: tea.KeyUp})
	if s := screen(t, m); !strings.Contains(s, "› 2. green") {
		t.Fatalf("after down, down, up:\n%s", s)
	}
	key(m, tea.KeyMsg{Type: tea.KeyEnter})
	if m.choice != nil || !strings.Contains(m.notice, `answering "green"`) {
		t.Fatalf("Enter did not answer green: choice %+v, notice %q", m.choice, m.notice)
	}
	if s := screen(t, m); strings.Contains(s, "Which colour?") {
		t.Fatalf("the answered choice is still shown:\n%s", s)
	}
}

// TestQuitAsksWhileBusy: quitting a busy thread asks, and "keep running"
// leaves it running; quitting an idle one detaches at once.
func TestQuitAsksWhileBusy(t *testing.T) {
	m := newTestModel(t)
	feed(m, client.Event{Kind: "message", Text: "build it"}, state("waiting_for_tool"))
	if cmd := key(m, runes("/quit"), tea.KeyMsg{Type: tea.KeyEnter}); cmd != nil {
		t.Fatal("quitting a busy thread did not ask first")
	}
	s := screen(t, m)
	if !strings.Contains(s, "The agent is busy: › keep running in the background") || !strings.Contains(s, "stop it") {
		t.Fatalf("the question:\n%s", s)
	}
	key(m, tea.KeyMsg{Type: tea.KeyDown})
	if s := screen(t, m); !strings.Contains(s, "› stop it") {
		t.Fatalf("down did not select stop:\n%s", s)
	}
	cmd := key(m, tea.KeyMsg{Type: tea.KeyUp}, tea.KeyMsg{Type: tea.KeyEnter})
	if cmd == nil {
		t.Fatal("Enter did nothing")
	}
	msg := cmd()
	if q, ok := msg.(quitMsg); !ok || q.stopped {
		t.Fatalf("keep running gave %#v", msg)
	}
	if _, cmd := m.Update(msg); cmd == nil {
		t.Fatal("no tea.Quit")
	}
	if o := m.Outcome(); !o.Busy || o.Stopped || o.Thread != "t1" || o.Status != "waiting_for_tool" {
		t.Fatalf("outcome %+v", o)
	}

	stop := newTestModel(t)
	feed(stop, client.Event{Kind: "message", Text: "build it"}, state("running"))
	key(stop, tea.KeyMsg{Type: tea.KeyCtrlC})
	cmd = key(stop, runes("s"))
	if q, ok := cmd().(quitMsg); !ok || !q.stopped {
		t.Fatalf("s (stop it) gave %#v", q)
	}

	idle := newTestModel(t)
	feed(idle, client.Event{Kind: "message", Text: "hi"}, client.Event{Kind: "turn", Text: "hello"}, state("idle"))
	cmd = key(idle, tea.KeyMsg{Type: tea.KeyCtrlC})
	if cmd == nil {
		t.Fatal("quitting an idle thread did nothing")
	}
	if q, ok := cmd().(quitMsg); !ok || q.stopped {
		t.Fatalf("quitting an idle thread asked or stopped it: %v", ok)
	}
}

// TestResizeAndSmallTerminal: the screen fills the terminal at any size
// and never draws a line wider than it.
func TestResizeAndSmallTerminal(t *testing.T) {
	m := newTestModel(t)
	long := strings.Repeat("word ", 60)
	feed(m, client.Event{Kind: "message", Text: long}, client.Event{Kind: "turn", Text: long},
		client.Event{Kind: "tool_call", Tool: "write_file", CallID: "c", Args: `{"path":"` + strings.Repeat("x", 200) + `"}`}, state("running"))
	for _, size := range [][2]int{{80, 24}, {120, 40}, {40, 12}, {80, 24}} {
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		s := screen(t, m)
		if !strings.Contains(s, "agentslice code") || !strings.Contains(s, "> ") {
			t.Fatalf("%dx%d:\n%s", size[0], size[1], s)
		}
	}
}

// TestColoursDegrade: with a colour profile the screen has colours;
// without one (NO_COLOR, a dumb terminal) it has none, and reads the same.
func TestColoursDegrade(t *testing.T) {
	defer lipgloss.SetColorProfile(lipgloss.ColorProfile())
	for _, p := range []termenv.Profile{termenv.ANSI256, termenv.Ascii} {
		lipgloss.SetColorProfile(p)
		m := newTestModel(t)
		feed(m, client.Event{Kind: "message", Text: "hi"},
			client.Event{Kind: "tool_call", Tool: "read_file", CallID: "c", Args: "{}"},
			client.Event{Kind: "tool_result", Tool: "read_file", CallID: "c", Text: "boom", IsError: true}, state("idle"))
		v := m.View()
		colour := strings.Contains(v, "\x1b[3") || strings.Contains(v, "\x1b[9") || strings.Contains(v, ";5;")
		if colour != (p == termenv.ANSI256) {
			t.Errorf("profile %v: colour escapes %v in %q", p, colour, v)
		}
		if s := ansi.Strip(v); !strings.Contains(s, "▸ read_file [failed]") {
			t.Errorf("profile %v:\n%s", p, s)
		}
	}
}

// TestNotesAndReset: markers become notes, errors stand out, a reset
// (the server lost its history) starts the conversation over.
func TestNotesAndReset(t *testing.T) {
	m := newTestModel(t)
	feed(m, client.Event{Kind: "message", Text: "go"},
		client.Event{Kind: "delta", CompletionID: "c1", Text: "half"},
		client.Event{Kind: "stopped", Text: "by a person"},
		client.Event{Kind: "error", Text: "completion stopped"},
		client.Event{Kind: "child_spawned", Child: "t1.k1"})
	s := screen(t, m)
	for _, want := range []string{"half [cut]", "· stopped: by a person", "! error: completion stopped", "· started child thread t1.k1"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q:\n%s", want, s)
		}
	}
	feed(m, client.Event{Kind: "reset"})
	if len(m.conv.Entries) != 0 {
		t.Fatalf("after a reset: %+v", m.conv.Entries)
	}
}

// TestStaleStreamIgnored: after /new, events of the previous thread's
// stream are dropped.
func TestStaleStreamIgnored(t *testing.T) {
	m := New(context.Background(), Options{Thread: "t1", NewThread: func() string { return "t2" }})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	old := m.gen
	key(m, runes("/new"), tea.KeyMsg{Type: tea.KeyEnter})
	if m.Thread() != "t2" {
		t.Fatalf("/new opened %q", m.Thread())
	}
	m.Update(eventMsg{gen: old, ev: client.Event{Kind: "message", Text: "from t1"}})
	if s := screen(t, m); strings.Contains(s, "from t1") || !strings.Contains(s, "thread t2") {
		t.Fatalf("after /new:\n%s", s)
	}
}

// TestHelpAndUnknownCommand: /help opens the pager, Esc closes it; an
// unknown command says so.
func TestHelpAndUnknownCommand(t *testing.T) {
	m := newTestModel(t)
	key(m, runes("/help"), tea.KeyMsg{Type: tea.KeyEnter})
	if s := screen(t, m); !strings.Contains(s, "/load") || !strings.Contains(s, "q or Esc closes") {
		t.Fatalf("help:\n%s", s)
	}
	key(m, tea.KeyMsg{Type: tea.KeyEsc}, runes("/frobnicate"), tea.KeyMsg{Type: tea.KeyEnter})
	if s := screen(t, m); !strings.Contains(s, "unknown command /frobnicate") {
		t.Fatalf("unknown command:\n%s", s)
	}
	chat := New(context.Background(), Options{Thread: "t1"})
	chat.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	key(chat, runes("/diff"), tea.KeyMsg{Type: tea.KeyEnter})
	if s := screen(t, chat); !strings.Contains(s, "no repository") {
		t.Fatalf("/diff in chat:\n%s", s)
	}
}

// TestReplayedEventsShownOnce: a history event that comes again (a
// resumed stream, one sent ahead of its commit) is shown once.
func TestReplayedEventsShownOnce(t *testing.T) {
	c := NewConversation()
	for i := 0; i < 2; i++ {
		c.Apply(client.Event{ID: "t1#0", Kind: "message", Text: "hi"})
		c.Apply(client.Event{ID: "t1#1", Kind: "turn", Text: "hello"})
	}
	c.Apply(client.Event{ID: "t1#2", Kind: "message", Text: "hi"}) // the same text, another message
	if len(c.Entries) != 3 {
		t.Fatalf("entries %+v", c.Entries)
	}
}

// TestStatusLine: the thread's state as read from the server: what it
// waits on, its children with their statuses, its token usage.
func TestStatusLine(t *testing.T) {
	m := newTestModel(t)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 24})
	until := time.Date(2026, 12, 1, 14, 5, 0, 0, time.Local)
	m.Update(threadMsg{gen: m.gen, th: &client.Thread{Status: "sleeping", Until: &until,
		State: client.ThreadState{Agent: "coder", Model: "big", Usage: client.Usage{Input: 12345, Output: 678, Cached: 9000}}},
		children: []childStatus{{ID: "t1.a", Status: "running"}, {ID: "t1.b", Status: "idle"}}})
	s := screen(t, m)
	for _, want := range []string{"● sleeping until 14:05:00 · tokens 12k in, 678 out (9000 cached) · children 2 (1 busy): t1.a running, t1.b idle", "model big"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q:\n%s", want, s)
		}
	}
	// A tool still working for a thread with nothing else to do (a
	// background command: serve says "watching") is shown, and makes the
	// thread busy: quitting asks.
	m.Update(threadMsg{gen: m.gen, th: &client.Thread{Status: "watching",
		State: client.ThreadState{Subscriptions: []client.Subscription{{CallID: "c1", Tool: "run_command"}}}}})
	if s := screen(t, m); !strings.Contains(s, "● watching run_command · 1 in the background: run_command") || !m.busy() {
		t.Errorf("a background command is not shown or not busy (busy %v):\n%s", m.busy(), s)
	}
	// The status alone says so (a state event, before the thread's
	// subscriptions are read).
	m.Update(threadMsg{gen: m.gen, th: &client.Thread{Status: "watching"}})
	if !m.busy() {
		t.Error("a watching thread is not busy")
	}
	// The cost so far at the catalog's prices, against the thread's limit.
	m.Update(threadMsg{gen: m.gen, th: &client.Thread{Status: "idle", Budget: &client.Budget{Spent: client.Spend{Tokens: 1200, USD: 0.0123},
		Limit: &client.Limit{USD: 0.5}}}})
	if s := screen(t, m); !strings.Contains(s, "cost $0.0123 of $0.50") {
		t.Errorf("the cost is not shown:\n%s", s)
	}
	m.Update(threadMsg{gen: m.gen, th: &client.Thread{Status: "waiting_for_provider", Reason: "503 from the provider"}})
	if s := screen(t, m); !strings.Contains(s, "● waiting for provider: 503 from the provider") {
		t.Errorf("waiting for the provider:\n%s", s)
	}
}
