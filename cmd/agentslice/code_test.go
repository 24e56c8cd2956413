package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/server"
)

// gitRepo makes a git repository with one committed file, a.txt.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-qm", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// codeServe starts a real serve in this process for `agentslice code`:
// the sandbox toolset on repo, an agent "coder" (the default), the
// scripted model playing script, and the given tool servers.
func codeServe(t *testing.T, repo string, script map[string]any, toolServers ...string) string {
	t.Helper()
	sb, _ := json.Marshal(script)
	sp := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(sp, sb, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"listen": "127.0.0.1:0", "store": "memory", "script": sp,
		"sandbox":       map[string]any{"repo": repo, "root": filepath.Join(t.TempDir(), "sandboxes"), "jail": "off", "output_every": "50ms"}, // the tests release commands through files in /tmp, which a jail hides
		"agents":        []map[string]any{{"name": "coder", "instructions": "You change code in the sandbox."}},
		"default_agent": "coder", "tool_servers": toolServers}
	b, _ := json.Marshal(cfg)
	c, err := server.DecodeConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := server.New(ctx, c, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv.URL()
}

// TestCodeReviewApplyDiscard: review prints a session's files and diff,
// apply commits them onto the user's branch, discard removes the
// sandbox; THREAD defaults to the repository's latest session; each
// failure has its exit code and names what it is about.
func TestCodeReviewApplyDiscard(t *testing.T) {
	repo := gitRepo(t)
	thread := codeThreadPrefix(repo) + "s1"
	url := codeServe(t, repo, map[string]any{"default": []map[string]any{{"text": "nothing"}},
		"threads": map[string]any{thread: []map[string]any{
			{"text": "Changing it.", "tool_call": map[string]any{"name": "write_file", "args": map[string]any{"path": "a.txt", "content": "hello world\n"}}},
			{"text": "Done."},
		}}})
	if code, out, errOut := runCmd("send", "-server", url, "-wait", thread, "greet the world"); code != 0 || out != "Changing it.\nDone.\n" {
		t.Fatalf("send: exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut := runCmd("code", "review", "-server", url, thread)
	if code != 0 || !strings.Contains(out, "thread "+thread+": branch agentslice/"+thread) || !strings.Contains(out, "1 files changed\n  a.txt\n") ||
		!strings.Contains(out, "-hello\n+hello world\n") {
		t.Fatalf("code review: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	// Without THREAD: the latest session of the repository at -dir.
	code, out, errOut = runCmd("code", "review", "-server", url, "-stat", "-dir", repo)
	if code != 0 || !strings.HasPrefix(out, "thread "+thread+":") || strings.Contains(out, "+hello world") {
		t.Fatalf("code review -stat -dir: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	code, out, errOut = runCmd("code", "apply", "-server", url, "-m", "greet the world", thread)
	if code != 0 || !strings.HasPrefix(out, "applied thread "+thread+" as ") || !strings.HasSuffix(out, ": a.txt\n") {
		t.Fatalf("code apply: exit %d, %q, %q", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "hello world\n" {
		t.Fatalf("a.txt after apply: %q", b)
	}
	if msg, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%s").Output(); err != nil || strings.TrimSpace(string(msg)) != "greet the world" {
		t.Fatalf("the applied commit: %q, %v", msg, err)
	}
	code, out, errOut = runCmd("code", "discard", "-server", url, thread)
	if code != 0 || out != "discarded the sandbox of thread "+thread+" (branch agentslice/"+thread+")\n" {
		t.Fatalf("code discard: exit %d, %q, %q", code, out, errOut)
	}

	other := gitRepo(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"code", "review", "-server", url, thread}, ExitNotFound, "agentslice code: 404 Not Found: thread " + thread + " has no sandbox (it has not used a sandbox tool) (field thread_id)\n"},
		{[]string{"code", "apply", "-server", url, "nope"}, ExitNotFound, "agentslice code: 404 Not Found: thread nope has no sandbox (it has not used a sandbox tool) (field thread_id)\n"},
		{[]string{"code", "review", "-server", url, "-dir", other}, ExitNotFound, "agentslice code: the repository " + other + " has no session yet (agentslice code starts one)\n"},
		{[]string{"code", "review", "-server", url, "-dir", t.TempDir()}, ExitUsage, "is not in a git repository"},
		{[]string{"code", "review", "-server", url, "a", "b"}, ExitUsage, `unexpected argument "b"`},
		{[]string{"code", "-server", url, repo}, ExitUsage, "the terminal UI needs a terminal"},
		{[]string{"code", "-server", url, "-new", "-thread", "x", repo}, ExitUsage, "-new and -thread"},
		{[]string{"chat", "-server", url, "x"}, ExitUsage, "the terminal UI needs a terminal"},
		{[]string{"threads", "-server", "http://127.0.0.1:1"}, ExitUnavailable, "connection refused"},
	} {
		code, _, errOut := runCmd(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}

// TestApplyConflictExit: an apply the repository refuses (a touched file
// has uncommitted changes) is a 409 that says why: exit 4, nothing
// changed.
func TestApplyConflictExit(t *testing.T) {
	repo := gitRepo(t)
	thread := codeThreadPrefix(repo) + "c1"
	url := codeServe(t, repo, map[string]any{"default": []map[string]any{{"text": "nothing"}},
		"threads": map[string]any{thread: []map[string]any{
			{"text": "Changing it.", "tool_call": map[string]any{"name": "write_file", "args": map[string]any{"path": "a.txt", "content": "from the agent\n"}}},
			{"text": "Done."},
		}}})
	if code, _, errOut := runCmd("send", "-server", url, "-wait", thread, "change a.txt"); code != 0 {
		t.Fatal(errOut)
	}
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("mine, uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd("code", "apply", "-server", url, thread)
	if code != ExitConflict || out != "" || !strings.HasPrefix(errOut, "agentslice code: ") || !strings.Contains(errOut, "409 Conflict") || !strings.Contains(errOut, "a.txt") {
		t.Fatalf("apply over an uncommitted change: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "mine, uncommitted\n" {
		t.Fatalf("a refused apply changed a.txt: %q", b)
	}
}

// TestCodeReviewWithoutSandbox: a server without the sandbox toolset
// answers 404 without naming the thread; the command names it.
func TestCodeReviewWithoutSandbox(t *testing.T) {
	url := startInProcess(t)
	code, out, errOut := runCmd("code", "review", "-server", url, "t1")
	if code != ExitNotFound || out != "" || errOut != "agentslice code: thread t1: 404 Not Found: this server has no sandbox toolset (configure sandbox.repo)\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
