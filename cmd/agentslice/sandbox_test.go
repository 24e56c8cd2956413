package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
)

// TestSandboxServerStandalone: `agentslice sandbox` serves the toolset of
// a repository; a call through the real dispatcher and callback receiver
// writes into the thread's worktree, not the repository.
func TestSandboxServerStandalone(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "--quiet"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	root := t.TempDir()
	go func() { // owned by this test: waited for below
		done <- runSandbox(ctx, []string{"-repo", repo, "-root", root, "-listen", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first line: %v (sandbox: %v)", err, <-done)
	}
	_, base, ok := strings.Cut(strings.TrimSpace(line), " at ")
	if !ok || !strings.HasPrefix(line, "agentslice sandbox: serving ") {
		t.Fatalf("first line %q", line)
	}
	go io.Copy(io.Discard, pr) // owned by the pipe: ends when runSandbox closes it

	rig := raptest.NewRig(t)
	if err := rig.Invoke(t, base, "thr_alone", "call_1", "write_file", `{"path":"hello.txt","content":"hi\n"}`); err != nil {
		t.Fatal(err)
	}
	if m := rig.Next(t); m.Kind != runtime.KindToolResult || m.Text != "wrote hello.txt (3 bytes)" {
		t.Fatalf("result %+v", m)
	}
	if b, err := os.ReadFile(filepath.Join(root, "thr_alone", "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Fatalf("the worktree's file: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "hello.txt")); err == nil {
		t.Fatal("the file was written into the user's repository")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runSandbox = %v after cancel, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runSandbox did not return after cancel")
	}

	// A person applies the thread's work.
	var out strings.Builder
	if err := runSandbox(context.Background(), []string{"-repo", repo, "-root", root, "-apply", "thr_alone", "-message", "hello"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(repo, "hello.txt")); err != nil || string(b) != "hi\n" || !strings.Contains(out.String(), "applied thread thr_alone as ") {
		t.Fatalf("after -apply: %q %v (output %q)", b, err, out.String())
	}
	if err := runSandbox(context.Background(), []string{"-repo", repo, "-root", root, "-apply", "thr_alone"}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "nothing to apply") {
		t.Fatalf("a second -apply: %v", err)
	}
	out.Reset()
	if err := runSandbox(context.Background(), []string{"-repo", repo, "-root", root, "-discard", "thr_alone"}, &out, io.Discard); err != nil ||
		!strings.Contains(out.String(), "discarded the sandbox of thread thr_alone") {
		t.Fatalf("-discard: %v (output %q)", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(root, "thr_alone")); err == nil {
		t.Fatal("the worktree is left after -discard")
	}
}

func TestSandboxServerRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-repo: missing"},
		{[]string{"-repo", ".", "-listen", "0.0.0.0:9100"}, "loopback only"},
		{[]string{"-repo", ".", "-pass-env", "AGENTSLICE_TOKEN"}, "-pass-env"},
		{[]string{"-repo", t.TempDir(), "-root", t.TempDir(), "-listen", "127.0.0.1:0"}, "not a git working copy"},
	} {
		err := runSandbox(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sandbox %q = %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}
