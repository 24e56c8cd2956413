package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/client"
	"github.com/agentslice/agentslice/internal/testenv"
)

// The terminal UI as a person uses it: `agentslice code` runs in a real
// terminal (tmux, on its own socket), keys are typed with send-keys and
// the screen is read with capture-pane. Nothing waits on the clock: each
// step polls the screen until what it expects is there, with a generous
// deadline, and fails showing the last screen. Every screen the test
// asserted on is kept (tmuxArtifacts).

// tmuxDeadline bounds one wait for the screen.
const tmuxDeadline = 90 * time.Second

type tmuxTerm struct {
	t      *testing.T
	socket string
	dir    string // where the screens are kept
	shots  int
}

// newTmux starts a private tmux server, or skips (fails under
// AGENTSLICE_REQUIRE_SERVICES=1) when tmux is missing.
func newTmux(t *testing.T) *tmuxTerm {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		msg := "tmux is not on PATH (scripts/tmux.sh installs it)"
		if os.Getenv(testenv.RequireVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.ArtifactDir()
	if base := os.Getenv("AGENTSLICE_ARTIFACTS"); base != "" {
		dir = filepath.Join(base, t.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screen captures: %s", dir)
	// A short socket path: sockets are limited to about 100 bytes.
	sockDir, err := os.MkdirTemp("", "astmux")
	if err != nil {
		t.Fatal(err)
	}
	tm := &tmuxTerm{t: t, socket: filepath.Join(sockDir, "s"), dir: dir}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", tm.socket, "kill-server").Run()
		os.RemoveAll(sockDir)
	})
	return tm
}

func (tm *tmuxTerm) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tm.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// start runs `agentslice args...` (this test binary, see runChild) in dir
// in a new 80x24 window named name. When the program ends the pane shows
// "[exit N]" and stays.
func (tm *tmuxTerm) start(name, dir string, args ...string) {
	tm.t.Helper()
	argv, _ := json.Marshal(args)
	script := filepath.Join(tm.t.TempDir(), name+".sh")
	body := fmt.Sprintf("#!/bin/sh\ncd %s || exit 1\nexport %s=%s\nunset %s\n%s -test.run='^$'\necho \"[exit $?]\"\nexec sleep 3600\n",
		shQuote(dir), childEnv, shQuote(string(argv)), ServerEnv, shQuote(os.Args[0]))
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		tm.t.Fatal(err)
	}
	if name == "first" {
		tm.tmux("new-session", "-d", "-s", "tui", "-n", name, "-x", "80", "-y", "24", script)
	} else {
		tm.tmux("new-window", "-t", "tui", "-n", name, script)
	}
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (tm *tmuxTerm) capture(window string) string {
	return tm.tmux("capture-pane", "-p", "-t", "tui:"+window)
}

// waitFor polls the window's screen until every want is on it, keeps that
// screen as the artifact label, and returns it.
func (tm *tmuxTerm) waitFor(window, label string, want ...string) string {
	tm.t.Helper()
	return tm.waitUntil(window, label, fmt.Sprintf("all of %q", want), func(screen string) bool {
		for _, w := range want {
			if !strings.Contains(screen, w) {
				return false
			}
		}
		return true
	})
}

// waitUntil polls the window's screen until ok holds (what says what
// it waits for), keeps that screen as the artifact label, and returns it.
func (tm *tmuxTerm) waitUntil(window, label, what string, ok func(string) bool) string {
	tm.t.Helper()
	deadline := time.Now().Add(tmuxDeadline)
	for {
		screen := tm.capture(window)
		if ok(screen) {
			tm.save(label, screen)
			return screen
		}
		if time.Now().After(deadline) {
			tm.save(label+"-FAILED", screen)
			tm.t.Fatalf("%s: the screen never showed %s; the last screen:\n%s", label, what, screen)
		}
		time.Sleep(50 * time.Millisecond) // polling the screen, not timing anything
	}
}

func (tm *tmuxTerm) save(label, screen string) {
	tm.shots++
	p := filepath.Join(tm.dir, fmt.Sprintf("%02d-%s.txt", tm.shots, label))
	if err := os.WriteFile(p, []byte(screen), 0o644); err != nil {
		tm.t.Errorf("keeping the screen: %v", err)
	}
}

// typeLine types text literally, then Enter.
func (tm *tmuxTerm) typeLine(window, text string) {
	tm.t.Helper()
	tm.tmux("send-keys", "-t", "tui:"+window, "-l", text)
	tm.tmux("send-keys", "-t", "tui:"+window, "Enter")
}

func (tm *tmuxTerm) keys(window string, keys ...string) {
	tm.t.Helper()
	tm.tmux(append([]string{"send-keys", "-t", "tui:" + window}, keys...)...)
}

// TestCodeUnderTmux: a session of `agentslice code` in a repository,
// against a real serve (the sandbox toolset, a choice tool, the scripted
// model): the streamed reply, a tool call folded to one line, a choice
// answered with the arrow keys and Enter, /quit while the agent is busy
// keeping it running, a reattach that shows the turn that finished
// meanwhile, then /diff and /apply of the session's changes.
func TestCodeUnderTmux(t *testing.T) {
	tm := newTmux(t)
	repo := gitRepo(t)
	release := filepath.Join(t.TempDir(), "release")
	steps := []map[string]any{
		{"text": "Let me read a.txt first.", "tool_call": map[string]any{"name": "read_file", "args": map[string]any{"path": "a.txt"}}},
		{"text": "Now the change.", "tool_call": map[string]any{"name": "write_file", "args": map[string]any{"path": "a.txt", "content": "hello world\n"}}},
		{"text": "I need to know one thing.", "tool_call": map[string]any{"name": "ask", "args": map[string]any{}}},
		{"text": "Green, then. Building now.", "tool_call": map[string]any{"name": "run_command",
			"args": map[string]any{"command": "echo building; i=0; while [ ! -f " + release + " ]; do i=$((i+1)); echo step $i; sleep 0.05; done; echo built"}}},
		// run_command answers "started" at once and runs in the background;
		// the agent sleeps until the command's final event wakes it.
		{"text": "Waiting for the build.", "tool_call": map[string]any{"name": "sleep_until_event_or_input", "args": map[string]any{}}},
		{"text": "All done: the build passed."},
	}
	url := codeServe(t, repo, map[string]any{"default": []map[string]any{{"text": "?"}},
		"match": []map[string]any{{"contains": "please fix a.txt", "steps": steps}}}, askServer(t))
	c, _ := client.New(url, "")

	tm.start("first", repo, "code", "-server", url)
	tm.waitFor("first", "start", "agentslice code", "Nothing here yet", "agent coder", "● new")
	tm.typeLine("first", "please fix a.txt")
	tm.waitFor("first", "choice", "you: please fix a.txt", "Let me read a.txt first.",
		`▸ read_file [done] {"path":"a.txt"} → 1 hello`, "▸ write_file [done]", "I need to know one thing.",
		"▸ ask [waiting]", "? Which colour?", "› 1. red", "  2. green", "● waiting for your choice")
	tm.keys("first", "Down")
	tm.waitFor("first", "choice-moved", "  1. red", "› 2. green")
	tm.keys("first", "Enter")
	screen := tm.waitFor("first", "running", "▸ ask [done]", "Green, then. Building now.", `▸ run_command [running] {"command":"echo building;`,
		"\n    step ", "Waiting for the build.", "▸ sleep_until_event_or_input [waiting]", "● sleeping")
	// The command's output goes on live under its folded line.
	seen := lastStep(screen)
	tm.waitUntil("first", "running-later", fmt.Sprintf("a step after %d", seen), func(screen string) bool { return lastStep(screen) > seen })
	tm.typeLine("first", "/quit")
	tm.waitFor("first", "quit-asks", "The agent is busy: › keep running in the background", "stop it")
	tm.keys("first", "Enter")
	tm.waitFor("first", "detached", "keeps running in the background", "reattaches", "[exit 0]")

	// Detached, the thread goes on: its command finishes, then its turn.
	l, err := c.Threads(context.Background(), client.ListOptions{})
	if err != nil || len(l.Threads) != 1 {
		t.Fatalf("threads: %+v, %v", l, err)
	}
	thread := l.Threads[0].ID
	if !strings.HasPrefix(thread, codeThreadPrefix(repo)) {
		t.Fatalf("the session's thread %q is not named after the repository (%s)", thread, codeThreadPrefix(repo))
	}
	if th, err := c.Thread(context.Background(), thread, math.MaxInt32); err != nil || (th.Status != "sleeping" && th.Status != "waiting_for_tool") {
		t.Fatalf("after detaching, the thread is %+v, %v; want it still waiting for its command", th, err)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := waitIdle(t, c, thread); err != nil {
		t.Fatal(err)
	}

	tm.start("again", repo, "code", "-server", url)
	tm.waitFor("again", "reattached", "thread "+thread[:20], "Green, then. Building now.", "▸ run_command [done]",
		"All done: the build passed.", "● idle")
	// A smaller terminal: the screen is drawn again to its size.
	tm.tmux("resize-window", "-t", "tui:again", "-x", "60", "-y", "16")
	// (tmux cuts the old screen to the new size at once: wait for the
	// program's own drawing, whose cut lines end in "…".)
	tm.waitUntil("again", "resized", "the screen drawn again at 60x16", func(screen string) bool {
		lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
		if len(lines) != 16 || !strings.HasPrefix(lines[0], " agentslice code · demo") || !strings.HasPrefix(lines[15], "/help") {
			return false
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "▸ run_command [done]") && strings.HasSuffix(l, "…") && len([]rune(l)) == 60 {
				return strings.Contains(screen, "● idle") && strings.Contains(screen, "> message")
			}
		}
		return false
	})
	tm.tmux("resize-window", "-t", "tui:again", "-x", "80", "-y", "24")
	tm.waitFor("again", "resized-back", "Green, then. Building now.", "All done: the build passed.")

	// The session's changes: the diff in a pager, then applied.
	tm.typeLine("again", "/diff")
	tm.waitFor("again", "diff", "diff --git a/a.txt b/a.txt", "-hello", "+hello world", "q or Esc closes")
	tm.keys("again", "q")
	tm.waitFor("again", "diff-closed", "All done: the build passed.", "> message, or /help")
	tm.typeLine("again", "/apply")
	tm.waitFor("again", "applied", "applied as ", ": a.txt")
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "hello world\n" {
		t.Fatalf("a.txt after /apply: %q", b)
	}
	tm.typeLine("again", "/quit") // idle: no question
	tm.waitFor("again", "left", "left thread "+thread, "[exit 0]")
}

var stepLine = regexp.MustCompile(`(?m)^    step (\d+)\s*$`)

// lastStep is the number of the newest "step N" line on the screen, 0
// for none.
func lastStep(screen string) int {
	n := 0
	for _, m := range stepLine.FindAllStringSubmatch(screen, -1) {
		if v, _ := strconv.Atoi(m[1]); v > n {
			n = v
		}
	}
	return n
}
