package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestServeSandbox: the scripted model edits, runs and diffs through the
// sandbox toolset mounted in serve; the work lands on the thread's branch
// and the user's working copy, index and HEAD are unchanged.
func TestServeSandbox(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	git := gitIn(t, repo)
	git("init", "--quiet", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "calc.go"), []byte("package calc\n\nfunc Add(a, b int) int { return a - b }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "--quiet", "-m", "first")
	if err := os.WriteFile(filepath.Join(repo, "wip.txt"), []byte("the user's own work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		h := sha256.New()
		h.Write([]byte(git("--no-optional-locks", "status", "--porcelain", "-uall", "--branch") + git("rev-parse", "HEAD")))
		for _, f := range []string{".git/index", ".git/HEAD", "calc.go", "wip.txt"} {
			b, err := os.ReadFile(filepath.Join(repo, f))
			if err != nil {
				t.Fatal(err)
			}
			h.Write(b)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	before := state()

	srv := startServer(t, Config{Script: testdata(t, "sandbox_script.json"), Sandbox: &Sandbox{Repo: repo, Root: t.TempDir()}})
	const thread = "thr_code"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Fix Add."}`)
	// The check runs in the background; the test lets it end once the
	// model ended its turn.
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "Waiting for the check."; ev = events.nextOf(t, "reply") {
	}
	box, err := srv.sandbox.Lookup(t.Context(), thread)
	if err != nil || box == nil {
		t.Fatalf("sandbox: %v %v", box, err)
	}
	if err := os.WriteFile(filepath.Join(box.Dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The thread is idle while each tool runs: wait for the last reply.
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "Add is fixed in the sandbox."; ev = events.nextOf(t, "reply") {
	}
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	results := map[string]string{}
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult {
			results[it.Name] = it.Text
		}
	}
	if !strings.HasPrefix(results["edit_file"], "edited calc.go") || !strings.HasPrefix(results["run_command"], "started command ") ||
		!strings.Contains(results[runtime.InjectedToolName], "finished: exit code 0 after") ||
		!strings.Contains(results["diff"], "+func Add(a, b int) int { return a + b }") {
		t.Fatalf("tool results %q", results)
	}
	if last := th.Items[len(th.Items)-1]; last.Kind != runtime.ItemAssistant || last.Text != "Add is fixed in the sandbox." {
		t.Fatalf("last item %+v", last)
	}
	if state() != before {
		t.Fatal("the session wrote the user's working copy, index or HEAD")
	}
	if got := git("rev-parse", "--verify", "agentslice/"+thread); got != git("rev-parse", "main") {
		t.Fatalf("branch agentslice/%s at %s, want the user's HEAD", thread, got)
	}

	// Review: the sandbox and its diff.
	var sb SandboxResponse
	if code := do(t, http.MethodGet, srv.URL()+"/threads/"+thread+"/sandbox", "", &sb); code != http.StatusOK ||
		sb.Branch != "agentslice/"+thread || strings.Join(sb.Files, " ") != "calc.go" || sb.Base+"\n" != git("rev-parse", "main") {
		t.Fatalf("GET sandbox: %d %+v", code, sb)
	}
	resp, err := http.Get(srv.URL() + "/threads/" + thread + "/sandbox/diff")
	if err != nil {
		t.Fatal(err)
	}
	diff, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(diff), "+func Add(a, b int) int { return a + b }") {
		t.Fatalf("GET diff: %d\n%s", resp.StatusCode, diff)
	}
	var apiErr map[string]any
	if code := do(t, http.MethodGet, srv.URL()+"/threads/thr_none/sandbox", "", &apiErr); code != http.StatusNotFound {
		t.Fatalf("GET the sandbox of a thread without one: %d %v", code, apiErr)
	}
	if state() != before {
		t.Fatal("reviewing wrote the user's working copy, index or HEAD")
	}

	// Apply: refused while the user has calc.go changed, then done.
	if err := os.WriteFile(filepath.Join(repo, "calc.go"), []byte("package calc // mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirty := state()
	var conflict struct {
		Reason string   `json:"reason"`
		Files  []string `json:"files"`
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/sandbox/apply", "", &conflict); code != http.StatusConflict ||
		strings.Join(conflict.Files, " ") != "calc.go" || !strings.Contains(conflict.Reason, "uncommitted changes") {
		t.Fatalf("apply over a dirty calc.go: %d %+v", code, conflict)
	}
	if state() != dirty {
		t.Fatal("a refused apply changed the user's state")
	}
	git("checkout", "--", "calc.go")
	var applied ApplyResponse
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/sandbox/apply", `{"message":"Fix Add"}`, &applied); code != http.StatusOK ||
		strings.Join(applied.Files, " ") != "calc.go" {
		t.Fatalf("apply: %d %+v", code, applied)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "calc.go")); !strings.Contains(string(b), "a + b") ||
		strings.TrimSpace(git("log", "-1", "--format=%s")) != "Fix Add" || strings.TrimSpace(git("rev-parse", "HEAD")) != applied.Commit {
		t.Fatalf("after apply: calc.go %q, HEAD %s", b, git("log", "-1", "--format=%H %s"))
	}
	if b, err := os.ReadFile(filepath.Join(repo, "wip.txt")); err != nil || string(b) != "the user's own work\n" {
		t.Fatalf("the user's untracked file after apply: %q %v", b, err)
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/sandbox/apply", "", &apiErr); code != http.StatusConflict {
		t.Fatalf("a second apply: %d %v", code, apiErr)
	}
	var discarded map[string]string
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/sandbox/discard", "", &discarded); code != http.StatusOK ||
		discarded["discarded"] != "agentslice/"+thread {
		t.Fatalf("discard: %d %v", code, discarded)
	}
	if code := do(t, http.MethodGet, srv.URL()+"/threads/"+thread+"/sandbox", "", &apiErr); code != http.StatusNotFound {
		t.Fatalf("GET the sandbox after discard: %d %v", code, apiErr)
	}
	if strings.Contains(git("branch", "--list", "agentslice/*"), "agentslice/") {
		t.Fatal("the sandbox branch is left after discard")
	}
}

// TestServeSandboxStacksChildren: through serve's engine, a child spawned
// by a coding thread reads its parent's uncommitted file (its sandbox is
// stacked on the parent's, thread_ancestors carried by the dispatch), and
// the parent squashes the child's work into its own sandbox.
func TestServeSandboxStacksChildren(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "--quiet", "-b", "main"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	srv := startServer(t, Config{Script: testdata(t, "sandbox_stack_script.json"), Sandbox: &Sandbox{Repo: repo, Root: t.TempDir()}})
	const thread = "thr_stack"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Build it with a child."}`)
	for ev := events.nextOf(t, "reply"); ev.Data.Text != "All squashed."; ev = events.nextOf(t, "reply") {
	}
	th := getThread(t, srv, thread)
	var child string
	results := map[string]string{}
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult {
			results[it.Name] = it.Text
		}
		if it.Kind == runtime.ItemToolCall && it.Name == "spawn_thread" {
			child = runtime.ChildThreadID(thread, it.CallID)
		}
	}
	if !strings.HasPrefix(results["squash_child"], "squashed thread "+child) || !strings.Contains(results["diff"], "2 files changed") ||
		!strings.Contains(results["diff"], "parent.txt, child.txt") && !strings.Contains(results["diff"], "child.txt, parent.txt") {
		t.Fatalf("the parent's results %q", results)
	}
	ch := getThread(t, srv, child)
	var read string
	for _, it := range ch.Items {
		if it.Kind == runtime.ItemToolResult && it.Name == "read_file" {
			read = it.Text
		}
	}
	if read != "     1\tfrom the parent\n" {
		t.Fatalf("the child read %q, want the parent's uncommitted file", read)
	}
}

// TestServeSandboxNeedsARepository: a sandbox.repo that is a directory but
// not a git working copy stops serve with an error naming it.
func TestServeSandboxNeedsARepository(t *testing.T) {
	t.Parallel()
	srv, err := New(context.Background(), Config{Listen: "127.0.0.1:0", Store: "memory", Sandbox: &Sandbox{Repo: t.TempDir(), Root: t.TempDir()}}, Options{Getenv: func(string) string { return "" }})
	if err == nil { // New reads the coder agent's conventions from the repository; Start builds the toolset
		err = srv.Start(context.Background())
		srv.Stop()
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "sandbox.repo" || !strings.Contains(ce.Reason, "not a git working copy") {
		t.Fatalf("Start = %v, want a ConfigError naming sandbox.repo", err)
	}
}

// gitIn runs git in repo as a test user and returns its output; a failure
// fails the test with git's output.
func gitIn(t *testing.T, repo string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
}

// TestServeInfoNamesTheSandboxRepository: GET /info names the repository
// the sandboxes are made from (absolute, as configured relative), and has
// no sandbox without the toolset.
func TestServeInfoNamesTheSandboxRepository(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	srv := startServer(t, Config{Sandbox: &Sandbox{Repo: repo, Root: t.TempDir(), Jail: "off"}})
	var info InfoResponse
	if code := do(t, http.MethodGet, srv.URL()+"/info", "", &info); code != http.StatusOK || info.Sandbox == nil ||
		!slices.Equal(info.Sandbox.Repos, []string{repo}) {
		t.Fatalf("GET /info with a sandbox: %d %+v, want the repository %s", code, info.Sandbox, repo)
	}
	plain := startServer(t, Config{})
	info = InfoResponse{}
	if code := do(t, http.MethodGet, plain.URL()+"/info", "", &info); code != http.StatusOK || info.Sandbox != nil {
		t.Fatalf("GET /info without a sandbox: %d %+v", code, info.Sandbox)
	}
}
