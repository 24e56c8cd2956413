package server

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/rap/sandbox"
	"github.com/agentslice/agentslice/internal/runtime"
)

// TestServeCoderSession replays a coding session, shaped as a real model
// streams it (reasoning, text, one tool call per completion), through the
// built-in coder agent on serve's engine: it reads the repository, runs
// the check in the background (idle until the final event), fixes one
// file, hands the other to a child whose sandbox is stacked on its own,
// squashes the child, checks again and reviews the diff, which is then
// applied through the API. The user's working copy is untouched until the
// apply; the coder's instructions carry the repository's conventions.
func TestServeCoderSession(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	git := gitIn(t, repo)
	files := map[string]string{
		"calc.go":              "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"mul.go":               "package calc\n\nfunc Mul(a, b int) int { return a + b }\n",
		"check.sh":             "grep -q 'a + b' calc.go && grep -q 'a \\* b' mul.go && echo PASS || { echo FAIL; exit 1; }\n",
		"AGENTS.md":            "Run check.sh before you finish.\n",
		".cursor/rules/go.mdc": "Keep functions short.\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "--quiet", "-b", "main")
	git("add", "-A")
	git("commit", "--quiet", "-m", "first")
	before := git("status", "--porcelain", "-uall") + git("rev-parse", "HEAD")

	srv := startServer(t, Config{Script: testdata(t, "coder_session_script.json"), Sandbox: &Sandbox{Repo: repo, Root: t.TempDir(), OutputEvery: "10ms"}})
	coder, ok := srv.agents.Agent(sandbox.CoderAgent)
	if !ok || srv.agents.Default() != sandbox.CoderAgent {
		t.Fatalf("the coder agent is not the default: %v %q", ok, srv.agents.Default())
	}
	for _, want := range []string{"It runs in the background and answers at once", "## AGENTS.md\n\nRun check.sh before you finish.\n", "## .cursor/rules/go.mdc\n\nKeep functions short.\n"} {
		if !strings.Contains(coder.Agent.Instructions, want) {
			t.Fatalf("the coder's instructions lack %q:\n%s", want, coder.Agent.Instructions)
		}
	}
	const thread = "thr_coder"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	release := func() {
		t.Helper()
		sb, err := srv.sandbox.Lookup(t.Context(), thread)
		if err != nil || sb == nil {
			t.Fatalf("sandbox: %v %v", sb, err)
		}
		if err := os.WriteFile(filepath.Join(sb.Dir, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitReply := func(text string) {
		t.Helper()
		for ev := events.nextOf(t, "reply"); ev.Data.Text != text; ev = events.nextOf(t, "reply") {
		}
	}
	postMessage(t, srv, thread, `{"text":"check.sh fails. Fix the code."}`)
	waitReply("The check runs in the background; I will look when it ends.")
	waitIdle(t, srv)
	if a := srv.System().Active(); a != 0 {
		t.Fatalf("%d threads hold a goroutine while the check runs", a)
	}
	release()
	waitReply("Checking again in the background.")
	release()
	waitReply("Done: Add adds and Mul multiplies; check.sh passes.")
	waitIdle(t, srv)

	th := getThread(t, srv, thread)
	var finals []string
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName && strings.Contains(it.Text, "finished: ") {
			finals = append(finals, it.Text)
		}
	}
	if len(finals) != 2 || !strings.Contains(finals[0], "exit code 1") || !strings.Contains(finals[0], "FAIL") ||
		!strings.Contains(finals[1], "exit code 0") || !strings.Contains(finals[1], "PASS") {
		t.Fatalf("the checks' final events: %q", finals)
	}
	if after := git("status", "--porcelain", "-uall") + git("rev-parse", "HEAD"); after != before {
		t.Fatalf("the session changed the user's repository:\n%s", after)
	}
	var applied ApplyResponse
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/sandbox/apply", `{"message":"Fix Add and Mul"}`, &applied); code != http.StatusOK ||
		strings.Join(applied.Files, " ") != "calc.go mul.go" {
		t.Fatalf("apply: %d %+v", code, applied)
	}
	for name, want := range map[string]string{"calc.go": "a + b", "mul.go": "a * b"} {
		if b, _ := os.ReadFile(filepath.Join(repo, name)); !strings.Contains(string(b), want) {
			t.Fatalf("%s after apply: %q", name, b)
		}
	}
}
