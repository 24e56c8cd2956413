package tui

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agentslice/agentslice/client"
	"github.com/agentslice/agentslice/internal/server"
)

// The commands against a real serve: each command's tea.Cmd is run here,
// by hand, as bubbletea would, and its message fed back into Update.

func startServe(t *testing.T) *client.Client {
	t.Helper()
	script, _ := json.Marshal(map[string]any{"default": []map[string]any{{"text": "Hello."}, {"text": "Again."}}})
	sp := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(sp, script, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := server.DecodeConfig([]byte(`{"listen": "127.0.0.1:0", "store": "memory", "script": ` + strconvQuote(sp) + `,
		"agents": [{"name": "coder", "instructions": "Code."}, {"name": "helper", "instructions": "Help."}], "default_agent": "coder"}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := server.New(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	c, err := client.New(srv.URL(), "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// run runs a command and feeds its message back, returning the message.
func run(t *testing.T, m *Model, cmd tea.Cmd) tea.Msg {
	t.Helper()
	if cmd == nil {
		t.Fatal("no command to run")
	}
	msg := cmd()
	m.Update(msg)
	return msg
}

// sendIdle sends a message and waits until the thread's turn ended.
func sendIdle(t *testing.T, c *client.Client, thread, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := c.Events(ctx, thread, client.EventOptions{Kinds: []string{"turn"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := c.Send(ctx, thread, client.Message{Text: text}); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == "turn" && ev.Seq > 0 {
			th, err := c.Thread(ctx, thread, 1<<30)
			if err == nil && th.Own() >= 2 && ev.Seq == th.Own() {
				return
			}
		}
	}
}

// TestCommandsAgainstServe: /load lists sessions by activity and opens
// one, /agent and /model pick from the server's lists and switch the
// thread, /stop stops it, /diff on a server without a sandbox says why.
func TestCommandsAgainstServe(t *testing.T) {
	c := startServe(t)
	sendIdle(t, c, "older", "first")
	sendIdle(t, c, "newer", "second")
	ctx := context.Background()
	m := New(ctx, Options{Client: c, Thread: "older", Repo: "/src/demo"})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})

	run(t, m, key(m, runes("/load"), tea.KeyMsg{Type: tea.KeyEnter}))
	s := screen(t, m)
	iNewer, iOlder := strings.Index(s, "newer  second"), strings.Index(s, "older  first")
	if m.mode != modePicker || iNewer < 0 || iOlder < 0 || iNewer > iOlder || !strings.Contains(s, "› ") {
		t.Fatalf("/load:\n%s", s)
	}
	if m.pickItems[m.pickSel].value != "older" {
		t.Fatalf("/load selects %q first, not the open thread", m.pickItems[m.pickSel].value)
	}
	msg := run(t, m, key(m, tea.KeyMsg{Type: tea.KeyUp}, tea.KeyMsg{Type: tea.KeyEnter}))
	if sm, ok := msg.(streamMsg); !ok || sm.err != nil || m.Thread() != "newer" {
		t.Fatalf("opening newer: %#v, thread %s", msg, m.Thread())
	}
	// The fresh stream replays the thread's history.
	for !strings.Contains(screen(t, m), "Hello.") {
		run(t, m, m.next())
	}
	if s := screen(t, m); !strings.Contains(s, "you: second") || strings.Contains(s, "you: first") {
		t.Fatalf("newer's history:\n%s", s)
	}

	switched, err := c.Events(ctx, "newer", client.EventOptions{Kinds: []string{"agent_switched", "model_switched"}})
	if err != nil {
		t.Fatal(err)
	}
	defer switched.Close()
	run(t, m, key(m, runes("/agent"), tea.KeyMsg{Type: tea.KeyEnter}))
	if s := screen(t, m); !strings.Contains(s, "› coder") || !strings.Contains(s, "  helper") {
		t.Fatalf("/agent:\n%s", s)
	}
	if msg := run(t, m, key(m, tea.KeyMsg{Type: tea.KeyDown}, tea.KeyMsg{Type: tea.KeyEnter})); msg.(noticeMsg).err != nil {
		t.Fatalf("switching the agent: %v", msg)
	}
	if ev, err := switched.Next(); err != nil || ev.Kind != "agent_switched" || !strings.Contains(ev.Text, "helper") {
		t.Fatalf("after /agent: %+v, %v", ev, err)
	}
	run(t, m, key(m, runes("/model"), tea.KeyMsg{Type: tea.KeyEnter}))
	if s := screen(t, m); !strings.Contains(s, "› (default: scripted)") || !strings.Contains(s, "  scripted  scripted") {
		t.Fatalf("/model:\n%s", s)
	}
	if msg := run(t, m, key(m, tea.KeyMsg{Type: tea.KeyDown}, tea.KeyMsg{Type: tea.KeyEnter})); msg.(noticeMsg).err != nil {
		t.Fatalf("switching the model: %v", msg)
	}
	if ev, err := switched.Next(); err != nil || ev.Kind != "model_switched" {
		t.Fatalf("after /model: %+v, %v", ev, err)
	}
	if msg := run(t, m, key(m, runes("/stop"), tea.KeyMsg{Type: tea.KeyEnter})); msg.(noticeMsg).err != nil {
		t.Fatalf("/stop: %v", msg)
	}
	run(t, m, key(m, runes("/diff"), tea.KeyMsg{Type: tea.KeyEnter}))
	if s := screen(t, m); m.mode != modeChat || !strings.Contains(s, "diff: 404 Not Found: this server has no sandbox toolset") {
		t.Fatalf("/diff without a sandbox:\n%s", s)
	}
	if msg := run(t, m, key(m, runes("/model nope"), tea.KeyMsg{Type: tea.KeyEnter})); msg.(noticeMsg).err == nil || !strings.Contains(screen(t, m), "400 Bad Request") {
		t.Fatalf("/model nope: %#v\n%s", msg, screen(t, m))
	}
}
