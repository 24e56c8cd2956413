package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
)

// testRepo makes a git repository with two commits' worth of files, then
// leaves the user's state dirty the way a developer's usually is: a
// modified tracked file, a staged change and an untracked file.
func testRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "--quiet", "-b", "main")
	write(t, dir, "README.md", "# demo\n")
	write(t, dir, "calc/calc.go", "package calc\n\nfunc Add(a, b int) int { return a - b }\n")
	write(t, dir, "calc/notes.txt", "one\ntwo\none\n")
	write(t, dir, ".gitignore", "*.log\n")
	run("add", "-A")
	run("commit", "--quiet", "-m", "first")
	write(t, dir, "README.md", "# demo, edited by the user\n") // unstaged
	write(t, dir, "staged.txt", "staged\n")
	run("add", "staged.txt")                    // staged
	write(t, dir, "scratch.txt", "untracked\n") // untracked
	return dir
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fingerprint hashes what the user owns: git status (read without
// taking optional locks, so the test itself does not refresh the index),
// the index file's bytes, HEAD (the branch it names and its commit), and
// every file of the working copy.
func fingerprint(t *testing.T, repo string) string {
	t.Helper()
	h := sha256.New()
	for _, args := range [][]string{
		{"--no-optional-locks", "status", "--porcelain=v1", "-uall", "--branch"},
		{"symbolic-ref", "HEAD"},
		{"rev-parse", "HEAD"},
	} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		h.Write(out)
	}
	idx, err := os.ReadFile(filepath.Join(repo, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	h.Write(idx)
	err = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write([]byte(p + "\x00"))
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

type rig struct {
	*raptest.Rig
	m    *Manager
	srv  *Server
	base string
	n    int
}

func newRig(t *testing.T, repo string, cfg Config) *rig {
	t.Helper()
	cfg.Repo = repo
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(m, rap.ServerConfig{Retry: raptest.FastRetry(5), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	r := raptest.NewRig(t)
	return &rig{Rig: r, m: m, srv: srv, base: raptest.StartServer(t, srv)}
}

// call invokes tool for thread (with its ancestors) through the real
// loader and dispatcher and returns the result message.
func (r *rig) call(t *testing.T, thread string, ancestors []string, tool string, args any) runtime.Message {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	l, err := rap.NewLoader(rap.LoaderConfig{Servers: []string{r.base}, Dispatcher: r.Dispatcher, Fetch: raptest.FastRetry(2), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	set, err := l.SetFor(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := set.Lookup(tool)
	if !ok {
		t.Fatalf("tool %q is not offered", tool)
	}
	if err := e.Async.(runtime.ArgsValidator).ValidateArgs(string(b)); err != nil {
		t.Fatalf("%s %s: %v", tool, b, err)
	}
	r.n++
	id := "call_" + strconv.Itoa(r.n)
	if err := e.Async.Dispatch(context.Background(), runtime.Invocation{ThreadID: thread, CallID: id, Name: tool, Args: string(b), Ancestors: ancestors}); err != nil {
		t.Fatal(err)
	}
	m := r.Next(t)
	if m.Kind != runtime.KindToolResult || m.ToolCallID != id {
		t.Fatalf("got %+v, want the result of %s", m, id)
	}
	return m
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Fatalf("%s: %q does not contain %q", what, got, w)
		}
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestSessionLeavesTheUserRepositoryUntouched runs a whole coding session
// (read, list, write, edit, run, diff) and checks the user's working copy,
// index and branch are byte for byte what they were, while the sandbox
// branch holds the work.
func TestSessionLeavesTheUserRepositoryUntouched(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	before := fingerprint(t, repo)
	r := newRig(t, repo, Config{})
	const th = "thr_a"

	m := r.call(t, th, nil, "read_file", map[string]any{"path": "README.md"})
	if m.Text != "     1\t# demo\n" {
		t.Fatalf("read_file README.md = %q, want HEAD's content (not the user's uncommitted edit)", m.Text)
	}
	m = r.call(t, th, nil, "list_files", map[string]any{})
	if want := ".gitignore\nREADME.md\ncalc/calc.go\ncalc/notes.txt"; m.Text != want {
		t.Fatalf("list_files = %q, want %q (no staged or untracked file of the user's)", m.Text, want)
	}
	mustContain(t, "edit_file", r.call(t, th, nil, "edit_file", map[string]any{"path": "calc/calc.go", "old": "a - b", "new": "a + b"}).Text, "edited calc/calc.go (1 replacement)")
	mustContain(t, "write_file", r.call(t, th, nil, "write_file", map[string]any{"path": "calc/calc_test.go", "content": "package calc\n"}).Text, "wrote calc/calc_test.go")
	_, m = r.run(t, th, map[string]any{"command": "grep -c 'a + b' calc/calc.go && echo built > out.log && exit 3"})
	mustContain(t, "run_command", m.Text, "exit code 3 after", "output:\n1\n")

	m = r.call(t, th, nil, "diff", map[string]any{})
	mustContain(t, "diff", m.Text, "2 files changed", "calc/calc.go, calc/calc_test.go", "-func Add(a, b int) int { return a - b }", "+func Add(a, b int) int { return a + b }")
	if strings.Contains(m.Text, "out.log") {
		t.Fatalf("diff shows an ignored file:\n%s", m.Text)
	}
	var seg rap.Display
	if err := json.Unmarshal([]byte(m.Display), &seg); err != nil {
		t.Fatalf("display %q: %v", m.Display, err)
	}
	files := SplitDiff(seg.Patch)
	if seg.Type != "diff" || seg.Path != "calc/calc.go, calc/calc_test.go" || len(files) != 2 ||
		files[0].Path != "calc/calc.go" || !strings.Contains(files[0].Patch, "+func Add(a, b int) int { return a + b }") ||
		files[1].Path != "calc/calc_test.go" || strings.Contains(files[1].Patch, "func Add") {
		t.Fatalf("display segment %+v, want the whole diff, which splits into one patch per file", seg)
	}

	if got := fingerprint(t, repo); got != before {
		t.Fatal("the user's working copy, index or HEAD changed during the session")
	}
	if got := gitOut(t, repo, "symbolic-ref", "--short", "HEAD"); got != "main" {
		t.Fatalf("the user's branch is %s", got)
	}
	if got, want := gitOut(t, repo, "rev-parse", "agentslice/thr_a"), gitOut(t, repo, "rev-parse", "main"); got != want {
		t.Fatalf("the sandbox branch is at %s, want the user's HEAD %s", got, want)
	}
}

func TestPathsOutsideTheSandboxAreRefused(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	outside := t.TempDir()
	write(t, outside, "secret.txt", "secret\n")
	// A committed symlink that leaves the repository.
	if err := os.Symlink(outside, filepath.Join(repo, "escape")); err != nil {
		t.Fatal(err)
	}
	gitOut(t, repo, "add", "escape")
	gitOut(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "link")
	r := newRig(t, repo, Config{})
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_file", map[string]any{"path": filepath.Join(outside, "secret.txt")}, "is absolute"},
		{"read_file", map[string]any{"path": "../../etc/passwd"}, "leaves the sandbox"},
		{"read_file", map[string]any{"path": "calc/../../x"}, "leaves the sandbox"},
		{"read_file", map[string]any{"path": "escape/secret.txt"}, "outside the sandbox through a symlink"},
		{"write_file", map[string]any{"path": "escape/new.txt", "content": "x"}, "outside the sandbox through a symlink"},
		{"write_file", map[string]any{"path": ".git/config", "content": "x"}, "git's own data"},
		{"list_files", map[string]any{"path": ".."}, "leaves the sandbox"},
		{"read_file", map[string]any{"path": "missing.go"}, "missing.go does not exist"},
		{"read_file", map[string]any{"path": "calc"}, "calc is a directory"},
	} {
		m := r.call(t, "thr_p", nil, tc.tool, tc.args)
		if !strings.HasPrefix(m.Text, "error: ") || !strings.Contains(m.Text, tc.want) {
			t.Errorf("%s %v = %q, want an error saying %q", tc.tool, tc.args, m.Text, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("write_file wrote outside the sandbox through the symlink")
	}
}

func TestEditFileMatchCounts(t *testing.T) {
	t.Parallel()
	r := newRig(t, testRepo(t), Config{})
	mustContain(t, "no match", r.call(t, "thr_e", nil, "edit_file", map[string]any{"path": "calc/notes.txt", "old": "three", "new": "3"}).Text, "error: ", "0 matches")
	mustContain(t, "two matches", r.call(t, "thr_e", nil, "edit_file", map[string]any{"path": "calc/notes.txt", "old": "one", "new": "1"}).Text, "error: ", "occurs 2 times")
	mustContain(t, "replace_all", r.call(t, "thr_e", nil, "edit_file", map[string]any{"path": "calc/notes.txt", "old": "one", "new": "1", "replace_all": true}).Text, "2 replacements")
	if got := r.call(t, "thr_e", nil, "read_file", map[string]any{"path": "calc/notes.txt"}).Text; got != "     1\t1\n     2\ttwo\n     3\t1\n" {
		t.Fatalf("after replace_all: %q", got)
	}
}

func TestReadFileWindowAndCap(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	r := newRig(t, repo, Config{MaxRead: 40})
	var long strings.Builder
	for i := 1; i <= 20; i++ {
		long.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	r.call(t, "thr_r", nil, "write_file", map[string]any{"path": "long.txt", "content": long.String()})
	if got := r.call(t, "thr_r", nil, "read_file", map[string]any{"path": "long.txt", "offset": 3, "limit": 2}).Text; got != "     3\tline 3\n     4\tline 4\n[long.txt has 20 lines; shown 3-4; read on with offset 5]\n" {
		t.Fatalf("offset 3 limit 2: %q", got)
	}
	got := r.call(t, "thr_r", nil, "read_file", map[string]any{"path": "long.txt"}).Text
	mustContain(t, "size cap", got, "     1\tline 1\n", "[long.txt has 20 lines; shown 1-2; read on with offset 3]")
	mustContain(t, "past the end", r.call(t, "thr_r", nil, "read_file", map[string]any{"path": "long.txt", "offset": 30}).Text, "offset 30 is past its end")
}

func TestListFilesFollowsGitignoreAndPattern(t *testing.T) {
	t.Parallel()
	r := newRig(t, testRepo(t), Config{})
	r.call(t, "thr_l", nil, "write_file", map[string]any{"path": "calc/debug.log", "content": "x"})
	r.call(t, "thr_l", nil, "write_file", map[string]any{"path": "calc/new.go", "content": "package calc\n"})
	if got := r.call(t, "thr_l", nil, "list_files", map[string]any{"path": "calc"}).Text; got != "calc/calc.go\ncalc/new.go\ncalc/notes.txt" {
		t.Fatalf("list_files calc = %q", got)
	}
	if got := r.call(t, "thr_l", nil, "list_files", map[string]any{"pattern": "*.go"}).Text; got != "calc/calc.go\ncalc/new.go" {
		t.Fatalf("list_files *.go = %q", got)
	}
	mustContain(t, "bad glob", r.call(t, "thr_l", nil, "list_files", map[string]any{"pattern": "[x"}).Text, "error: ", "not a valid glob")
}

// TestRunCommandTimeoutKillsTheProcessGroup: a command that outlives its
// timeout is reported, and a background child it started dies with it.
func TestRunCommandTimeoutKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	r := newRig(t, testRepo(t), Config{Jail: JailOff}) // bg.pid is a host pid only outside the jail's PID namespace
	_, m := r.run(t, "thr_k", map[string]any{"command": "sleep 300 & echo $! > bg.pid; echo started; wait", "timeout_s": 1})
	mustContain(t, "timeout", m.Text, "killed after the time limit of 1s", "output:\nstarted\n")
	sb, err := r.m.Lookup(context.Background(), "thr_k")
	if err != nil || sb == nil {
		t.Fatalf("lookup: %v %v", sb, err)
	}
	b, err := os.ReadFile(filepath.Join(sb.Dir, "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(raptest.Timeout)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the background child %d is still running after the timeout", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gone reports whether pid no longer runs (absent, or a zombie).
func gone(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return strings.HasPrefix(rest, "Z")
}

func TestRunCommandGetsNoSecretsAndOutputTail(t *testing.T) {
	t.Setenv("AGENTSLICE_TOKEN", "secret-api-token")
	r := newRig(t, testRepo(t), Config{MaxOutput: 64})
	_, m := r.run(t, "thr_v", map[string]any{"command": "env; echo END"})
	if strings.Contains(m.Text, "AGENTSLICE_") || !strings.Contains(m.Text, "END\n\nfull log: ") {
		t.Fatalf("the command saw the runtime's variables, or the tail is lost:\n%s", m.Text)
	}
	mustContain(t, "tail", m.Text, "exit code 0", "before them left out")
	r = newRig(t, testRepo(t), Config{})
	_, m = r.run(t, "thr_v", map[string]any{"command": "env; pwd"})
	sb, _ := r.m.Lookup(context.Background(), "thr_v")
	if strings.Contains(m.Text, "AGENTSLICE_") || !strings.Contains(m.Text, "PATH=") || !strings.Contains(m.Text, "\n"+sb.Dir+"\n\nfull log: ") {
		t.Fatalf("want the allow-listed environment and the sandbox as the directory:\n%s", m.Text)
	}
}

// TestChildSandboxIsStackedOnItsParent: a child starts from its parent's
// sandbox as it is, uncommitted edits included (committed to the parent's
// branch first), and its diff shows only its own changes.
func TestChildSandboxIsStackedOnItsParent(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	before := fingerprint(t, repo)
	r := newRig(t, repo, Config{})
	r.call(t, "thr_parent", nil, "edit_file", map[string]any{"path": "calc/calc.go", "old": "a - b", "new": "a + b"})
	r.call(t, "thr_parent", nil, "write_file", map[string]any{"path": "parent.txt", "content": "from the parent\n"})
	userHead := gitOut(t, repo, "rev-parse", "main")

	child := r.call(t, "thr_child", []string{"thr_root", "thr_parent"}, "read_file", map[string]any{"path": "parent.txt"})
	if child.Text != "     1\tfrom the parent\n" {
		t.Fatalf("the child reads %q, want the parent's uncommitted file", child.Text)
	}
	parentTip := gitOut(t, repo, "rev-parse", "agentslice/thr_parent")
	if parentTip == userHead {
		t.Fatal("the parent's edits were not committed to its branch")
	}
	if got := gitOut(t, repo, "rev-parse", "agentslice/thr_child"); got != parentTip {
		t.Fatalf("the child's branch starts at %s, want the parent's snapshot %s", got, parentTip)
	}
	r.call(t, "thr_child", []string{"thr_root", "thr_parent"}, "write_file", map[string]any{"path": "child.txt", "content": "from the child\n"})
	d := r.call(t, "thr_child", []string{"thr_root", "thr_parent"}, "diff", map[string]any{}).Text
	mustContain(t, "child diff", d, "1 file changed", "child.txt")
	if strings.Contains(d, "parent.txt") || strings.Contains(d, "calc.go") {
		t.Fatalf("the child's diff shows the parent's changes:\n%s", d)
	}
	// The parent's diff still shows its own work against the user's HEAD,
	// not the child's.
	pd := r.call(t, "thr_parent", nil, "diff", map[string]any{}).Text
	mustContain(t, "parent diff", pd, "2 files changed", "calc/calc.go, parent.txt")
	if strings.Contains(pd, "child.txt") {
		t.Fatalf("the parent's diff shows the child's file:\n%s", pd)
	}
	if fingerprint(t, repo) != before {
		t.Fatal("stacking wrote the user's working copy, index or HEAD")
	}
}

// TestSandboxIsFoundAfterARestart: a new manager on the same root reuses a
// thread's worktree and its base.
func TestSandboxIsFoundAfterARestart(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	root := t.TempDir()
	r := newRig(t, repo, Config{Root: root})
	r.call(t, "thr_s", nil, "write_file", map[string]any{"path": "kept.txt", "content": "kept\n"})
	r2 := newRig(t, repo, Config{Root: root})
	mustContain(t, "diff after restart", r2.call(t, "thr_s", nil, "diff", map[string]any{}).Text, "1 file changed", "kept.txt")
}

// TestThreadIDsThatCannotNameABranch: any thread ID the runtime accepts
// gets a sandbox, under a name that is a valid ref and a plain directory,
// distinct from the name of a similar ID.
func TestThreadIDsThatCannotNameABranch(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	r := newRig(t, repo, Config{})
	for _, th := range []string{"user:42/é..lock", "user-42-é--lock"} {
		mustContain(t, th, r.call(t, th, nil, "write_file", map[string]any{"path": "f.txt", "content": th}).Text, "wrote f.txt")
	}
	a, b := r.mustBox(t, "user:42/é..lock"), r.mustBox(t, "user-42-é--lock")
	if a.Name == b.Name || a.Dir == b.Dir || strings.ContainsAny(a.Name, ":/.") || filepath.Dir(a.Dir) != r.m.Root() {
		t.Fatalf("names %q and %q (dirs %s, %s)", a.Name, b.Name, a.Dir, b.Dir)
	}
	gitOut(t, repo, "check-ref-format", "refs/heads/"+a.Branch)
	gitOut(t, repo, "rev-parse", "--verify", a.Branch)
	if Name("thr_plain-1") != "thr_plain-1" {
		t.Fatalf("a plain ID is renamed: %q", Name("thr_plain-1"))
	}
}

func TestNewManagerRefusesWhatIsNotARepository(t *testing.T) {
	t.Parallel()
	if _, err := NewManager(Config{}); err == nil || !strings.Contains(err.Error(), "repo: missing") {
		t.Fatalf("no repo: %v", err)
	}
	if _, err := NewManager(Config{Repo: t.TempDir(), Root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "not a git working copy") {
		t.Fatalf("not a repository: %v", err)
	}
	empty := t.TempDir()
	gitOut(t, empty, "init", "--quiet")
	if _, err := NewManager(Config{Repo: empty, Root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no commit yet") {
		t.Fatalf("no commit: %v", err)
	}
}

func (r *rig) mustBox(t *testing.T, thread string) *Sandbox {
	t.Helper()
	sb, err := r.m.Lookup(context.Background(), thread)
	if err != nil || sb == nil {
		t.Fatalf("sandbox of %s: %v %v", thread, sb, err)
	}
	return sb
}

// TestConcurrentFirstCalls: first tool calls arriving together, for one
// thread and for several, make one sandbox per thread and no error.
func TestConcurrentFirstCalls(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	m, err := NewManager(Config{Repo: repo, Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	threads := []string{"thr_1", "thr_1", "thr_1", "thr_2", "thr_3", "thr_2"}
	got := make([]*Sandbox, len(threads))
	errs := make(chan error, len(threads))
	for i, th := range threads {
		go func() { // waited for below through errs
			sb, err := m.Ensure(context.Background(), th, nil)
			got[i] = sb
			errs <- err
		}()
	}
	for range threads {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got[0] != got[1] || got[0] != got[2] || got[3] != got[5] || got[0] == got[3] || got[3] == got[4] {
		t.Fatalf("sandboxes %v: want one per thread", got)
	}
	if wt := gitOut(t, repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 4 {
		t.Fatalf("worktrees:\n%s\nwant the user's and three sandboxes", wt)
	}
}

// TestLostWorktreeIsMadeAgain: a worktree directory removed by hand is
// made again on the thread's branch, with its committed work and base.
func TestLostWorktreeIsMadeAgain(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	root := t.TempDir()
	r := newRig(t, repo, Config{Root: root})
	r.call(t, "thr_p2", nil, "write_file", map[string]any{"path": "p.txt", "content": "p\n"})
	r.call(t, "thr_lost", []string{"thr_p2"}, "write_file", map[string]any{"path": "kept.txt", "content": "kept\n"})
	if err := os.RemoveAll(filepath.Join(root, "thr_lost")); err != nil {
		t.Fatal(err)
	}
	r2 := newRig(t, repo, Config{Root: root})
	d := r2.call(t, "thr_lost", []string{"thr_p2"}, "diff", map[string]any{}).Text
	mustContain(t, "after the loss", d, "no changes against the base")
	mustContain(t, "committed work", r2.call(t, "thr_lost", []string{"thr_p2"}, "read_file", map[string]any{"path": "p.txt"}).Text, "     1\tp\n")
}
