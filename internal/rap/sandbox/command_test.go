package sandbox

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
)

// run starts run_command for thread and returns its "started" result and
// its final event, with the events between them.
func (r *rig) run(t *testing.T, thread string, args any) (started, final runtime.Message) {
	t.Helper()
	started = r.call(t, thread, nil, "run_command", args)
	if !started.Subscription || !strings.HasPrefix(started.Text, "started command "+started.ToolCallID) {
		t.Fatalf("run_command answered %+v, want a started subscription", started)
	}
	for {
		m := r.Next(t)
		if m.Kind == runtime.KindEvent && m.ToolCallID == started.ToolCallID && m.Final {
			if !m.Associative {
				t.Fatalf("final event %+v is not associative", m)
			}
			return started, m
		}
	}
}

// logOf reads the log path a command's final event names.
func logOf(t *testing.T, final string) string {
	t.Helper()
	_, p, ok := strings.Cut(final, "full log: ")
	if !ok {
		t.Fatalf("no log path in %q", final)
	}
	return strings.TrimSpace(p)
}

// TestRunCommandInTheBackground: the call answers "started" before the
// command ends; the output goes out as views while it runs; one final
// associative event carries the status and the tail; the whole log is
// outside the sandbox's diff and read_file reads it; the command's record
// is gone once reported.
func TestRunCommandInTheBackground(t *testing.T) {
	t.Parallel()
	r := newRig(t, testRepo(t), Config{Batch: 10 * time.Millisecond, MaxOutput: 32})
	const th = "thr_bg"
	sb, err := r.m.Ensure(context.Background(), th, nil)
	if err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(sb.Dir, "release")
	started := r.call(t, th, nil, "run_command", map[string]any{
		"command": "echo first line; while [ ! -f release ]; do sleep 0.01; done; rm release; seq 1 200; exit 4"})
	if !started.Subscription {
		t.Fatalf("started %+v", started)
	}
	// It runs on after the answer: its first line shows in a view.
	views := r.Receiver.Views()
	deadline := time.Now().Add(raptest.Timeout)
	for {
		b, ok, _ := views.View(context.Background(), th, ViewType)
		var cv CommandView
		if ok && json.Unmarshal(b, &cv) == nil && strings.Contains(cv.Output, "first line") {
			if cv.State != "running" || cv.CommandID != started.ToolCallID {
				t.Fatalf("view %+v", cv)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no view of the running command's output: %s", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if recs, _ := r.m.records(); len(recs) != 1 || recs[0].Call != started.ToolCallID || recs[0].State != stateRunning {
		t.Fatalf("records while running: %+v", recs)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var final runtime.Message
	for final.Kind == "" {
		if m := r.Next(t); m.Kind == runtime.KindEvent && m.Final {
			final = m
		} else if m.Kind == runtime.KindEvent {
			t.Fatalf("an event of an unwatched command: %+v", m)
		}
	}
	mustContain(t, "final event", final.Text, "command "+started.ToolCallID+" finished: exit code 4 after", "left out):\n", "199\n200\n")
	logPath := logOf(t, final.Text)
	b, err := os.ReadFile(logPath)
	if err != nil || !strings.HasPrefix(string(b), "first line\n1\n2\n") || !strings.HasSuffix(string(b), "\n200\n") {
		t.Fatalf("the log %s: %q %v", logPath, b, err)
	}
	if rel, err := filepath.Rel(sb.Dir, logPath); err == nil && !strings.HasPrefix(rel, "..") {
		t.Fatalf("the log %s is inside the sandbox", logPath)
	}
	read := r.call(t, th, nil, "read_file", map[string]any{"path": logPath, "limit": 2})
	mustContain(t, "read_file of the log", read.Text, "     1\tfirst line\n", "     2\t1\n")
	if d := r.call(t, th, nil, "diff", map[string]any{}); !strings.HasPrefix(d.Text, "no changes") {
		t.Fatalf("the diff after the command: %q", d.Text)
	}
	// The log of another sandbox, or any other absolute path, is refused.
	other := r.call(t, "thr_other", nil, "read_file", map[string]any{"path": logPath})
	mustContain(t, "another sandbox's log", other.Text, "error: ", "is absolute")
	if recs, _ := r.m.records(); len(recs) != 0 {
		t.Fatalf("records after the final event: %+v", recs)
	}
}

// TestRunCommandWatchWakesOnOutput: with watch, output batches arrive as
// associative, non-final events before the final one.
func TestRunCommandWatchWakesOnOutput(t *testing.T) {
	t.Parallel()
	r := newRig(t, testRepo(t), Config{Batch: 10 * time.Millisecond, WatchEvery: time.Nanosecond})
	const th = "thr_watch"
	sb, err := r.m.Ensure(context.Background(), th, nil)
	if err != nil {
		t.Fatal(err)
	}
	started := r.call(t, th, nil, "run_command", map[string]any{"watch": true,
		"command": "echo compiling; while [ ! -f release ]; do sleep 0.01; done; echo done"})
	m := r.Next(t)
	if m.Kind != runtime.KindEvent || m.Final || !m.Associative || !strings.Contains(m.Text, "compiling\n") ||
		!strings.Contains(m.Text, "command "+started.ToolCallID+" is running") {
		t.Fatalf("want an output event, got %+v", m)
	}
	if err := os.WriteFile(filepath.Join(sb.Dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for m.Kind != runtime.KindEvent || !m.Final {
		m = r.Next(t)
	}
	mustContain(t, "final", m.Text, "exit code 0", "compiling\ndone\n")
}

// TestRunCommandCancelKillsTheGroup: cancel_tool_call (what the runtime
// sends for cancel_subscription and interrupted calls) kills the command
// and its children, sends no final event and drops the record.
func TestRunCommandCancelKillsTheGroup(t *testing.T) {
	t.Parallel()
	r := newRig(t, testRepo(t), Config{Jail: JailOff}) // a host pid in bg.pid
	const th = "thr_cancel"
	sb, err := r.m.Ensure(context.Background(), th, nil)
	if err != nil {
		t.Fatal(err)
	}
	started := r.call(t, th, nil, "run_command", map[string]any{"command": "sleep 300 & echo $! > bg.pid; wait"})
	pid := waitPid(t, filepath.Join(sb.Dir, "bg.pid"))
	body := `{"thread_id":"` + th + `","tool_call_id":"` + started.ToolCallID + `"}`
	resp, err := http.Post(r.base+rap.CancelToolCallPath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitGone(t, pid)
	waitFor(t, "the call to end", func() bool { return r.srv.Running() == 0 })
	if recs, _ := r.m.records(); len(recs) != 0 {
		t.Fatalf("records after the cancel: %+v", recs)
	}
	if n := r.Queue.Count(); n != 1 {
		t.Fatalf("%d messages after the cancel, want only the started result", n)
	}
}

// TestRestartReportsTheCommandsThatDied: a server that dies under a
// running command (its Stop skipped, as with kill -9: the process group
// runs on) is followed by one that kills the leftovers and sends the
// thread a truthful final event; tool_call_status answers alive false.
func TestRestartReportsTheCommandsThatDied(t *testing.T) {
	t.Parallel()
	repo, root := testRepo(t), t.TempDir()
	r := newRig(t, repo, Config{Root: root, Jail: JailOff})
	const th = "thr_crash"
	sb, err := r.m.Ensure(context.Background(), th, nil)
	if err != nil {
		t.Fatal(err)
	}
	started := r.call(t, th, nil, "run_command", map[string]any{"command": "echo building; sleep 300 & echo $! > bg.pid; wait"})
	pid := waitPid(t, filepath.Join(sb.Dir, "bg.pid"))
	// The crash: a second manager and server on the same root, while the
	// first one's command still runs (its kit is never told).
	m2, err := NewManager(Config{Repo: repo, Root: root, Jail: JailOff})
	if err != nil {
		t.Fatal(err)
	}
	srv2, err := NewServer(m2, rap.ServerConfig{Retry: raptest.FastRetry(5), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	base2 := raptest.StartServer(t, srv2)
	// The first server is not really dead: once the second kills the
	// group, it may report the kill too; the second's report is the one
	// a real crash leaves.
	var final runtime.Message
	for final.Kind == "" {
		if m := r.Next(t); m.Kind == runtime.KindEvent && m.Final && strings.Contains(m.Text, "did not finish") {
			final = m
		}
	}
	mustContain(t, "the restart's final event", final.Text, "command "+started.ToolCallID+" did not finish", "exit status is unknown",
		"output:\nbuilding\n", "full log: ")
	waitGone(t, pid)
	resp, err := http.Post(base2+rap.ToolCallStatusPath, "application/json",
		strings.NewReader(`{"thread_id":"`+th+`","tool_call_id":"`+started.ToolCallID+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var st rap.ToolCallStatusResponse
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Alive {
		t.Fatalf("tool_call_status after the restart: %+v %v", st, err)
	}
	resp.Body.Close()
	// The first server, which this test cannot really kill, may still be
	// finishing its own copy of the call (it saw the kill too): the record
	// is gone once both are done.
	waitFor(t, "no command record after the report", func() bool {
		recs, _ := m2.records()
		return len(recs) == 0
	})
}

// TestStopKeepsTheRecordForTheNextStart: a server stopped in order kills
// its commands and the next start reports them as stopped.
func TestStopKeepsTheRecordForTheNextStart(t *testing.T) {
	t.Parallel()
	repo, root := testRepo(t), t.TempDir()
	m, err := NewManager(Config{Repo: repo, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(m, rap.ServerConfig{Retry: raptest.FastRetry(5), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{Rig: raptest.NewRig(t), m: m, srv: srv, base: raptest.StartServer(t, srv)}
	started := rg.call(t, "thr_stop", nil, "run_command", map[string]any{"command": "echo up; sleep 300"})
	waitFor(t, "the command's output", func() bool {
		b, _ := os.ReadFile(m.logPath("thr_stop", started.ToolCallID))
		return string(b) == "up\n"
	})
	srv.Stop()
	recs, _ := m.records()
	if len(recs) != 1 || recs[0].State != stateStopped {
		t.Fatalf("records after Stop: %+v", recs)
	}
	m2, err := NewManager(Config{Repo: repo, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	srv2, err := NewServer(m2, rap.ServerConfig{Retry: raptest.FastRetry(5), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	raptest.StartServer(t, srv2)
	for {
		if ev := rg.Next(t); ev.Kind == runtime.KindEvent && ev.Final {
			mustContain(t, "final", ev.Text, "was stopped while it ran", "output:\nup\n")
			return
		}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(raptest.Timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitPid(t *testing.T, file string) int {
	t.Helper()
	var pid int
	waitFor(t, file, func() bool {
		b, err := os.ReadFile(file)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, "process "+strconv.Itoa(pid)+" to end", func() bool { return gone(pid) })
}

// TestJail: where bwrap works, a command cannot write outside its sandbox
// (the repository, $HOME), sees an empty private /tmp and has no network
// but loopback; elsewhere the test says why it skips.
func TestJail(t *testing.T) {
	t.Parallel()
	if _, err := ProbeJail(context.Background()); err != nil {
		if os.Getenv("AGENTSLICE_REQUIRE_SERVICES") == "1" {
			t.Fatalf("no jail on this host (scripts/bwrap.sh installs bubblewrap): %v", err)
		}
		t.Skipf("no jail on this host (scripts/bwrap.sh installs bubblewrap): %v", err)
	}
	repo := testRepo(t)
	r := newRig(t, repo, Config{Jail: JailOn})
	if ok, _ := r.m.Jailed(); !ok {
		t.Fatal("JailOn without a jail")
	}
	marker := filepath.Join(os.TempDir(), "agentslice-jail-"+strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(marker) })
	// A directory outside /tmp (the jail's /tmp is its own): the jail
	// shows it, read-only.
	outside, err := os.MkdirTemp(".", "jail-outside-")
	if err != nil {
		t.Fatal(err)
	}
	outside, _ = filepath.Abs(outside)
	t.Cleanup(func() { os.RemoveAll(outside) })
	_, final := r.run(t, "thr_jail", map[string]any{"command": "echo inside > mine.txt && cat mine.txt; " +
		"touch " + filepath.Join(outside, "escaped") + " && echo WROTE-OUTSIDE; " +
		"ls /tmp | grep -c agentslice-jail; " +
		"echo NET; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"})
	// /proc/net/dev lists the interfaces of the command's network
	// namespace: loopback only.
	mustContain(t, "jailed command", final.Text, "exit code 0", "inside\n", "Read-only file system", "\n0\nNET\nlo\n\nfull log: ")
	if _, out, _ := strings.Cut(final.Text, "\noutput:\n"); strings.Contains(out, "WROTE-OUTSIDE") {
		t.Fatalf("a jailed command wrote outside its sandbox:\n%s", final.Text)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
		t.Fatal("the file written outside the sandbox exists")
	}
}

// TestUndeliveredFinalEventIsSentAtTheNextStart: a command that ended
// while the runtime could not be reached keeps its final event in its
// record; the next start sends that event, not a "did not finish".
func TestUndeliveredFinalEventIsSentAtTheNextStart(t *testing.T) {
	t.Parallel()
	repo, root := testRepo(t), t.TempDir()
	rg := raptest.NewRig(t)
	m, err := NewManager(Config{Repo: repo, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	url, err := rg.Signer.CallbackURL("thr_late", "call_late")
	if err != nil {
		t.Fatal(err)
	}
	final := "command call_late finished: exit code 0 after 1s: true\n(no output)\nfull log: x\n"
	if err := m.saveRecord(&record{V: 1, Thread: "thr_late", Call: "call_late", CallbackURL: url, Command: "true",
		State: stateFinished, Final: final, Pid: 0}); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(m, rap.ServerConfig{Retry: raptest.FastRetry(5), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	raptest.StartServer(t, srv)
	ev := rg.Next(t)
	if ev.Kind != runtime.KindEvent || !ev.Final || !ev.Associative || ev.Text != final {
		t.Fatalf("at the next start: %+v", ev)
	}
	waitFor(t, "the record to go", func() bool { recs, _ := m.records(); return len(recs) == 0 })
}
