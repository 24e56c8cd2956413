//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless/lambdatest"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/testenv"
)

// TestSandboxOverLambda: one coding turn of a Lambda-hosted agent through
// the standalone sandbox tool server (`agentslice sandbox`, the binary
// scripts/e2e.sh builds), as on AWS next to a repository: the slice
// function dispatches write_file and run_command to it, it answers
// through the receiver's callback URL, the command's final event wakes
// the thread, and the work is on the thread's branch while the user's
// working copy is untouched.
func TestSandboxOverLambda(t *testing.T) {
	bin := filepath.Join(testenv.Need(t, binVar), "agentslice", "agentslice")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v (scripts/e2e.sh builds it)", bin, err)
	}
	repo := t.TempDir()
	gitRun := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	gitRun(repo, "init", "--quiet", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("a repository\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(repo, "add", "-A")
	gitRun(repo, "commit", "--quiet", "-m", "first")
	userState := gitRun(repo, "status", "--porcelain", "-uall", "--branch") + gitRun(repo, "rev-parse", "HEAD")

	// The tool server, listening on a port of its choosing; its first
	// line says where.
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "sandbox", "-repo", repo, "-root", t.TempDir(), "-listen", "127.0.0.1:0", "-network", "deny", "-output-every", "200ms")
	cmd.Stderr = lineWriter(t, "sandbox")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	first, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("agentslice sandbox said nothing: %v", err)
	}
	_, base, ok := strings.Cut(strings.TrimSpace(first), " at ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("agentslice sandbox's first line %q names no URL", first)
	}
	resp, err := http.Get(base + "/.well-known/rap-toolset")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the sandbox's toolset: %v %v", resp, err)
	}
	resp.Body.Close()

	r := startRig(t, rigOptions{toolServers: []string{base}})
	th := "code-" + time.Now().Format("150405")
	r.send(t, th, "m1", "a sandbox coding turn: write hello.txt and check it")
	var got []string
	views := 0
	err = r.outputs.WaitFor(Timeout, func(rcv []lambdatest.Received) bool {
		got, views = got[:0], 0
		for _, rc := range rcv {
			if ev, err := sqsq.DecodeOutput(rc.Body); err == nil && ev.ThreadID == th {
				got = append(got, ev.Kind+": "+ev.Text)
				if ev.Kind == "view" {
					views++
				}
			}
		}
		return len(got) > 0 && got[len(got)-1] == "reply: The check passed."
	})
	if err != nil {
		t.Fatalf("the thread's output %q: %v", got, err)
	}
	kinds, thread := r.kinds(t, th)
	var final string
	for _, it := range thread.Items {
		if it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName {
			final = it.Text
		}
	}
	// grep counts one line; git status in the sandbox shows the new file.
	if !strings.Contains(final, "finished: exit code 0") || !strings.Contains(final, "step 4\n1\n?? hello.txt\n") {
		t.Fatalf("the command's final event %q (history %v)", final, kinds)
	}
	// The command's output views were display only (the receiver's live
	// views in the dedup table, published to the output queue): people
	// saw several, and history keeps the last one only, so they cost the
	// thread no slice each.
	inHistory := 0
	for _, it := range thread.Items {
		if it.Kind == runtime.ItemMarker && it.Name == runtime.ViewMarkerName {
			inHistory++
		}
	}
	t.Logf("%d views published, %d in history", views, inHistory)
	if views < 2 || inHistory > 1 {
		t.Fatalf("%d views published, %d in history (%v); want several published and at most the last in history", views, inHistory, kinds)
	}
	branch := "agentslice/" + th
	if out := gitRun(repo, "log", "--oneline", "-1", branch); out == "" {
		t.Fatalf("no branch %s", branch)
	}
	if _, err := os.Stat(filepath.Join(repo, "hello.txt")); err == nil {
		t.Fatal("the file landed in the user's working copy")
	}
	if now := gitRun(repo, "status", "--porcelain", "-uall", "--branch") + gitRun(repo, "rev-parse", "HEAD"); now != userState {
		t.Fatalf("the user's working copy changed:\n%s\nwas\n%s", now, userState)
	}
}

// lineWriter logs what a process writes, line by line.
type lineLogger struct {
	t    *testing.T
	name string
}

func lineWriter(t *testing.T, name string) *lineLogger { return &lineLogger{t, name} }

func (l *lineLogger) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		l.t.Logf("%s: %s", l.name, line)
	}
	return len(b), nil
}
