package doctest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// workTree returns a directory that looks like the repository root (each
// top-level entry linked, except bin/ and the run files), so the page's
// commands build into a bin/ of the test's own and leave the checkout alone.
func workTree(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	w := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case "bin", ".run", ".git", "agentslice":
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(w, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// runPage runs the page's shell blocks as one bash script in a fresh work
// tree with its own data directory, after prelude, with each key of subst
// replaced by its value (free ports for the page's fixed ones), and returns
// what it printed. Whatever happens, a daemon the page started is stopped.
func runPage(t *testing.T, page, prelude string, subst map[string]string) (stdout, stderr string) {
	t.Helper()
	out := runPath(t, []string{page}, prelude, subst)
	return out[0].stdout, out[0].stderr
}

// pageOutput is what one page's blocks printed.
type pageOutput struct{ stdout, stderr string }

// runPath runs pages one after the other, as a reader following them
// would: in one work tree (what one page builds, the next finds), each
// page's blocks as one bash script with a data directory of its own (so
// each page starts as its reader would, with no threads), prelude before
// the first. It fails the test at the first page whose blocks fail.
func runPath(t *testing.T, pages []string, prelude string, subst map[string]string) []pageOutput {
	t.Helper()
	w := workTree(t)
	var outs []pageOutput
	for i, page := range pages {
		md, err := os.ReadFile(filepath.Join(repoRoot(t), page))
		if err != nil {
			t.Fatal(err)
		}
		blocks := ShellBlocks(md)
		runnable := 0
		for _, b := range blocks {
			if b.Skip == "" {
				runnable++
			}
		}
		if runnable == 0 {
			t.Fatalf("%s has no runnable shell block", page)
		}
		// A page's mktemp -d directories are under a TMPDIR of its own, so
		// that a daemon it started on one of them is found and stopped
		// too, whatever happens.
		data, tmp := t.TempDir(), t.TempDir()
		env := []string{"AGENTSLICE_DATA=" + data, "TMPDIR=" + tmp}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "AGENTSLICE_") && !strings.HasPrefix(kv, "TMPDIR=") {
				env = append(env, kv)
			}
		}
		t.Cleanup(func() {
			bin := filepath.Join(w, "bin", "agentslice")
			if _, err := os.Stat(bin); err != nil {
				return
			}
			dirs, _ := filepath.Glob(filepath.Join(tmp, "*", "daemon.json"))
			for _, d := range append([]string{filepath.Join(data, "daemon.json")}, dirs...) {
				if _, err := os.Stat(d); err == nil {
					stop := exec.Command(bin, "daemon", "stop", "-data", filepath.Dir(d))
					stop.Env = env
					_ = stop.Run()
				}
			}
		})
		script := Script(page, blocks)
		if i == 0 {
			script = prelude + script
		}
		for k, v := range subst {
			script = strings.ReplaceAll(script, k, v)
		}
		stdout, stderr, err := runScript(w, env, script)
		if err != nil {
			t.Fatalf("%s: the shell blocks failed (%v); the last ### line names the block\nstdout:\n%s\nstderr:\n%s", page, err, stdout, stderr)
		}
		outs = append(outs, pageOutput{stdout, stderr})
	}
	return outs
}

// runScript runs a bash script in dir with env, in a process group of its
// own that is killed if it outlives the deadline.
func runScript(dir string, env []string, script string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// TestGettingStarted runs the newcomer's path end to end against a real
// build of the command: the README's blocks (the quick start, a budget
// that pauses and is raised, a fork, a pinned agent version), every block
// of docs/getting-started.md (build, a daemon serving the scripted agent, a
// message sent with the command line and its reply, the history, the
// conformance check of the example tools, stop), then a guide,
// docs/forks.md. The output must be what the pages say it is.
func TestGettingStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs servers; not in -short")
	}
	t.Parallel()
	out := runPath(t, []string{"README.md", "docs/getting-started.md", "docs/forks.md"}, "", nil)
	check := func(page, got string, wants ...string) {
		t.Helper()
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("%s: the output lacks %q:\n%s", page, want, got)
			}
		}
	}
	check("README.md", out[0].stdout,
		"Let me look at the clock.\nI asked the get_time tool; its answer is in the history.\nthread paris: idle, 5 items, agent assistant\n",
		"the budget of the thread's tree of 1500 tokens is reached\n  [0] raise by 1500 tokens\n",
		"chose [0] raise by 1500 tokens",
		"Model b has no opinion.",
		"marker: agent helper: definition version ")
	check("docs/getting-started.md", out[1].stdout,
		"daemon started at http://127.0.0.1:",
		"Let me look at the clock.\nI asked the get_time tool; its answer is in the history.\n",
		"thread demo: idle, 5 items, agent assistant\nuser: What time is it in Paris?\n",
		"tool_result get_time (ok): ",
		"PASS  probe get_time",
		" 0 failed, ",
		"daemon stopped")
	check("docs/forks.md", out[2].stdout,
		"thread demo: idle, 7 items, agent helper",
		"user: And the day after?\nassistant: Model b has no opinion.",
		`"replay":"Model b: about noon."`,
		`"replay":"Model b: tomorrow is a Monday."`,
		"marker: agent helper: definition version ",
		"marker: agent helper: upgraded to definition version ")
	// The pinned thread kept its version across the change: only the
	// explicit upgrade is in its history.
	if n := strings.Count(out[2].stdout, "now applies"); n != 1 {
		t.Errorf("docs/forks.md: want one \"now applies\" marker (the free thread's), got %d:\n%s", n, out[2].stdout)
	}
}

// TestShellBlocks: sh, bash and shell blocks are found with their lines;
// blocks marked for AWS (info or comment) or doctest: skip are kept but
// skipped; other languages are not blocks.
func TestShellBlocks(t *testing.T) {
	t.Parallel()
	md := "# T\n\n```sh\necho one\n```\n\n```text\nnot run\n```\n\n<!-- aws -->\n```sh\nagentslice deploy\n```\n\n" +
		"```sh aws\ncdk deploy\n```\n\n<!-- doctest: skip (opens a browser) -->\n\n```bash\nxdg-open x\n```\n\n~~~shell\necho two\n~~~\n"
	var got []string
	for _, b := range ShellBlocks([]byte(md)) {
		got = append(got, strings.TrimSpace(b.Text)+"|"+b.Skip)
	}
	want := "echo one|;agentslice deploy|needs an AWS account;cdk deploy|needs an AWS account;xdg-open x|marked doctest: skip;echo two|"
	if strings.Join(got, ";") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, ";"), want)
	}
	if b := ShellBlocks([]byte(md)); b[0].Line != 3 || b[4].Line != 26 {
		t.Errorf("lines: %d, %d", b[0].Line, b[4].Line)
	}
	s := Script("p.md", ShellBlocks([]byte(md)))
	if !strings.Contains(s, "echo '### p.md:3' >&2\necho one\n") || strings.Contains(s, "cdk deploy") ||
		!strings.Contains(s, "### p.md:16 skipped (needs an AWS account)") {
		t.Errorf("script:\n%s", s)
	}
}

// freePort returns a port of 127.0.0.1 nothing listens on just now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestRapkitGuide runs the shell blocks of docs/rapkit.md: the example tool
// in Go, TypeScript and Python, each started and passed by `agentslice rap
// check` (on free ports instead of 9101-9103).
func TestRapkitGuide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs three tool servers; not in -short")
	}
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		need(t, "node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(repoRoot(t), "sdk", "typescript", "node_modules", "ajv")); err != nil {
		need(t, "sdk/typescript's npm packages are not installed (scripts/npm-deps.sh)")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		need(t, "python3 is not on PATH")
	}
	subst := map[string]string{}
	for _, p := range []string{"9101", "9102", "9103"} {
		subst["127.0.0.1:"+p] = "127.0.0.1:" + freePort(t)
		subst[" "+p+" &"] = " " + strings.TrimPrefix(subst["127.0.0.1:"+p], "127.0.0.1:") + " &"
	}
	out, _ := runPage(t, "docs/rapkit.md", "go build -o bin/agentslice ./cmd/agentslice\n", subst)
	if n := strings.Count(out, "\n14 passed, 0 failed, 0 warnings, 0 skipped\n"); n != 3 {
		t.Errorf("want three clean reports, got %d:\n%s", n, out)
	}
	if !strings.Contains(out, "PASS  probe wait_for_url     200, a subscription, 1 event(s), the last final") {
		t.Errorf("the probe's line differs from the page's:\n%s", out)
	}
}

// need skips a test for a missing tool, or fails it when
// AGENTSLICE_REQUIRE_SERVICES=1 (make test).
func need(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("AGENTSLICE_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestOperatingGuide runs docs/operating.md's blocks for serve: the first
// hour's checks, a backup of a stopped data directory restored into
// another, and a kill -9 the next start recovers from.
func TestOperatingGuide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs servers; not in -short")
	}
	t.Parallel()
	if _, err := exec.LookPath("jq"); err != nil {
		need(t, "jq is not on PATH")
	}
	out, _ := runPage(t, "docs/operating.md", "", nil)
	for _, want := range []string{
		`"status":"ready"}`,
		"I asked the get_time tool; its answer is in the history.",
		`"status": "ok"`,
		"thread ops: idle, 5 items, agent assistant\n",
		"daemon stopped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	// The restored copy and the recovered directory each show the thread.
	if n := strings.Count(out, "thread ops: idle, 5 items"); n != 2 {
		t.Errorf("want the thread read back twice (restore, kill -9), got %d:\n%s", n, out)
	}
}
