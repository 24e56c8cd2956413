package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentslice/agentslice/client"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/server"
)

// testDaemonCommand runs `agentslice <args>` as this test binary (see
// runChild), so that a daemon the tests start is the code under test.
func testDaemonCommand(args []string) (*exec.Cmd, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	argv, _ := json.Marshal(args)
	cmd.Env = append(os.Environ(), childEnv+"="+string(argv))
	return cmd, nil
}

// remoteScript: thread "tt" calls get_time, then answers; every other
// thread answers "Hello from the scripted model." to each message.
func remoteScript(t *testing.T) string {
	script := map[string]any{
		"default": []map[string]any{{"text": "Hello from the scripted model."}, {"text": "Hello again."}},
		"threads": map[string]any{"ch": []map[string]any{
			{"text": "Asking.", "tool_call": map[string]any{"name": "ask", "args": map[string]any{}}},
			{"text": "green it is"},
		}, "tt": []map[string]any{
			{"text": "checking the time", "tool_call": map[string]any{"name": "get_time", "args": map[string]any{"timezone": "UTC"}}},
			{"text": "it is late\nvery late"},
			{"text": "still late"},
		}},
	}
	b, _ := json.Marshal(script)
	p := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// startInProcess starts a real serve (memory store, the script, the
// get_time tool) in this process, stopped when the test ends.
func startInProcess(t *testing.T) string {
	t.Helper()
	return startInProcessToken(t, "")
}

// startInProcessToken is startInProcess requiring a bearer token.
func startInProcessToken(t *testing.T, token string, toolServers ...string) string {
	t.Helper()
	return startInProcessServer(t, token, toolServers...).URL()
}

func startInProcessServer(t *testing.T, token string, toolServers ...string) *server.Server {
	t.Helper()
	ctx := context.Background()
	srv, err := server.New(ctx, server.Config{Listen: "127.0.0.1:0", Script: remoteScript(t), Store: server.StoreMemory, AuthToken: token,
		ToolServers: toolServers, ExampleTools: &server.ExampleTools{GetTime: true}}, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// TestSendWaitAndThreads: send -wait prints the reply once the turn ends
// (through a tool call), send without TEXT reads stdin and prints the
// message ID, threads lists the threads, and API errors name the problem.
func TestSendWaitAndThreads(t *testing.T) {
	url := startInProcess(t)
	code, out, errOut := runCmd("send", "-server", url, "-wait", "t1", "hello", "there")
	if code != 0 || out != "Hello from the scripted model.\n" {
		t.Fatalf("send -wait: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCmd("send", "-server", url, "-wait", "tt", "what time is it?")
	if code != 0 || out != "checking the time\nit is late\nvery late\n" {
		t.Fatalf("send -wait through a tool call: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	stdinReader = strings.NewReader("from stdin\n")
	defer func() { stdinReader = os.Stdin }()
	code, out, errOut = runCmd("send", "-server", url, "-id", "m-stdin", "t2")
	if code != 0 || out != "m-stdin\n" {
		t.Fatalf("send from stdin: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	c, _ := client.New(url, "")
	th, err := waitIdle(t, c, "t2")
	if err != nil || th.Items[0].Text != "from stdin" {
		t.Fatalf("t2 = %+v, %v", th, err)
	}

	code, out, errOut = runCmd("threads", "-server", url)
	if code != 0 {
		t.Fatalf("threads: exit %d, %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !regexp.MustCompile(`^THREAD\s+STATUS\s+AGENT\s+LAST ACTIVITY\s+ITEMS\s+TITLE$`).MatchString(lines[0]) {
		t.Fatalf("threads printed:\n%s", out)
	}
	// Each row: the thread, its status, its agent (none here), its last
	// activity, its items and its title (the first user message).
	for id, title := range map[string]string{"t1": "hello there", "t2": "from stdin", "tt": "what time is it?"} {
		if !regexp.MustCompile(`(?m)^` + id + `\s+idle\s+-\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+\d+\s+` + regexp.QuoteMeta(title) + `\s*$`).MatchString(out) {
			t.Errorf("threads lacks an idle row for %s titled %q:\n%s", id, title, out)
		}
	}

	code, out, _ = runCmd("threads", "-server", url, "-json")
	var l client.ThreadList
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || l.Count != 3 {
		t.Fatalf("threads -json: exit %d, %q", code, out)
	}

	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"send", "-server", url, "-agent", "nobody", "t1", "hi"}, `400 Bad Request: names agent "nobody", but the configuration defines no agents (field agent)`, ExitRefused},
		{[]string{"send", "-server", url, "t 1", "hi"}, "(field thread_id)", ExitRefused},
		{[]string{"send", "-server", url}, "missing THREAD", ExitUsage},
		{[]string{"send", "-server", "localhost:1", "t", "hi"}, "-server: client: server URL", ExitUsage},
		{[]string{"threads", "-server", url, "-limit", "-1"}, "-limit -1 is negative", ExitUsage},
		{[]string{"tail", "-server", url, "a", "b"}, `unexpected argument "b"`, ExitUsage},
		{[]string{"threads", "-server", url, "-nope"}, "flag provided but not defined: -nope", ExitUsage},
	} {
		code, _, errOut := runCmd(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	for _, sub := range []string{"send", "tail", "threads", "daemon"} {
		if code, _, errOut := runCmd(sub, "-h"); code != 0 || !strings.Contains(errOut, "usage: agentslice "+sub) {
			t.Errorf("%s -h: exit %d, %q", sub, code, errOut)
		}
	}
}

// TestServerAndTokenFromTheEnvironment: without -server the commands
// talk to $AGENTSLICE_SERVER, with the bearer token of $AGENTSLICE_TOKEN;
// a missing token is the server's 401, named.
func TestServerAndTokenFromTheEnvironment(t *testing.T) {
	url := startInProcessToken(t, "s3cret")
	t.Setenv(ServerEnv, url)
	t.Setenv(server.TokenEnv, "")
	if code, _, errOut := runCmd("threads"); code != ExitAuth || !strings.Contains(errOut, "401 Unauthorized: a bearer token is required") {
		t.Fatalf("threads without a token: exit %d, %q", code, errOut)
	}
	t.Setenv(server.TokenEnv, "s3cret")
	if code, out, errOut := runCmd("send", "-wait", "e1", "hi"); code != 0 || out != "Hello from the scripted model.\n" {
		t.Fatalf("send with the token: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := runCmd("tail", "-n", "1", "e1"); code != 0 || out != "user: hi\n" {
		t.Fatalf("tail with the token: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// waitIdle waits until a thread is idle after its first message (the
// stream is open before each look, so no state change is missed), then
// reads it.
func waitIdle(t *testing.T, c *client.Client, thread string) (*client.Thread, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		s, err := c.Events(ctx, thread, client.EventOptions{Kinds: []string{"state"}})
		if err != nil {
			return nil, err
		}
		th, err := c.Thread(ctx, thread, 0)
		if err == nil && th.Status == "idle" && len(th.Items) >= 2 {
			s.Close()
			return th, nil
		}
		if err != nil && !client.IsNotFound(err) {
			s.Close()
			return nil, err
		}
		_, err = s.Next() // a state change: look again
		s.Close()
		if err != nil {
			return nil, err
		}
	}
}

// TestTailPrintsEvents: tail prints a thread's history readably, then
// follows it live; -after resumes after a cursor; -json prints the raw
// events.
func TestTailPrintsEvents(t *testing.T) {
	srv := startInProcessServer(t, "")
	url := srv.URL()
	if code, _, errOut := runCmd("send", "-server", url, "-wait", "tt", "what time is it?"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := runCmd("tail", "-server", url, "-n", "5", "tt")
	want := regexp.MustCompile(`^user: what time is it\?
assistant: checking the time
tool_call get_time \{"timezone":"UTC"\}
tool_result get_time \(ok\): .+
assistant: it is late
  very late
$`)
	if code != 0 || !want.MatchString(out) {
		t.Fatalf("tail: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}

	// Live: a tail resuming at the end sees the next turn as it happens.
	var th *client.Thread
	c, _ := client.New(url, "")
	th, err := c.Thread(context.Background(), "tt", 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	var liveOut, liveErr bytes.Buffer
	subs, changed := srv.Events().Subscribers()
	go func() { // ends after printing 3 events
		code := run(context.Background(), []string{"tail", "-server", url, "-n", "3", "-after", fmt.Sprint(th.Own()), "tt"}, &liveOut, &liveErr)
		done <- result{code, liveOut.String(), liveErr.String()}
	}()
	for n := subs; n <= subs; { // the tail subscribed: what follows is live
		select {
		case <-changed:
			n, changed = srv.Events().Subscribers()
		case <-time.After(time.Minute):
			t.Fatal("the live tail did not subscribe")
		}
	}
	if code, _, errOut := runCmd("send", "-server", url, "-wait", "tt", "and now?"); code != 0 {
		t.Fatal(errOut)
	}
	select {
	case r := <-done:
		// A live tail also sees the running state; the history lines come in order.
		lines := strings.Split(strings.TrimSpace(r.out), "\n")
		var hist []string
		for _, l := range lines {
			if !strings.HasPrefix(l, "state: ") && !strings.HasPrefix(l, "usage: ") {
				hist = append(hist, l)
			}
		}
		if r.code != 0 || len(lines) != 3 || len(hist) == 0 || hist[0] != "user: and now?" {
			t.Fatalf("live tail: exit %d, stderr %q, stdout:\n%s", r.code, r.err, r.out)
		}
	case <-time.After(time.Minute):
		t.Fatal("the live tail did not print 3 events")
	}

	code, out, _ = runCmd("tail", "-server", url, "-n", "1", "-json", "-after", "1", "tt")
	var ev client.Event
	if code != 0 || json.Unmarshal([]byte(out), &ev) != nil || ev.Kind != "turn" || ev.Seq != 2 || ev.Text != "checking the time" {
		t.Fatalf("tail -json -after 1: exit %d, %q", code, out)
	}
}

var startedRE = regexp.MustCompile(`daemon started at (http://\S+) \(pid (\d+),`)

// TestDaemonLifecycle: start runs a daemon that writes its file, status
// finds it, a second start finds the running one, the serve commands use
// it without starting another, stop ends it and removes the file.
func TestDaemonLifecycle(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := json.Marshal(map[string]any{"script": remoteScript(t), "log_level": "warn"})
	if err := os.WriteFile(filepath.Join(dir, daemonConfigName), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd("daemon", "status", "-data", dir); code != 1 || !strings.Contains(errOut, "no daemon runs for "+dir) {
		t.Fatalf("status before start: exit %d, %q", code, errOut)
	}
	code, out, errOut := runCmd("daemon", "start", "-data", dir)
	m := startedRE.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("start: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	url, pid := m[1], 0
	fmt.Sscan(m[2], &pid)
	defer reap(t, pid)
	info, err := readDaemonFile(dir)
	if err != nil || info.PID != pid || info.URL != url {
		t.Fatalf("daemon file = %+v, %v; want pid %d at %s", info, err, pid, url)
	}
	want := fmt.Sprintf("daemon running at %s (pid %d, data %s)\n", url, pid, dir)
	if code, out, _ := runCmd("daemon", "status", "-data", dir); code != 0 || out != want {
		t.Fatalf("status: exit %d, %q; want %q", code, out, want)
	}
	if code, out, _ := runCmd("daemon", "start", "-data", dir); code != 0 || !strings.HasPrefix(out, fmt.Sprintf("daemon already running at %s (pid %d,", url, pid)) {
		t.Fatalf("second start: exit %d, %q", code, out)
	}
	code, out, errOut = runCmd("send", "-data", dir, "-wait", "d1", "hi")
	if code != 0 || out != "Hello from the scripted model.\n" || errOut != "" {
		t.Fatalf("send through the daemon: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, _ := runCmd("daemon", "stop", "-data", dir); code != 0 || out != fmt.Sprintf("daemon stopped (pid %d)\n", pid) {
		t.Fatalf("stop: exit %d, %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, daemonFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the daemon file outlived a clean stop: %v", err)
	}
	if code, out, _ := runCmd("daemon", "stop", "-data", dir); code != 0 || out != "no daemon runs for "+dir+"\n" {
		t.Fatalf("second stop: exit %d, %q", code, out)
	}
	log, _ := os.ReadFile(filepath.Join(dir, daemonLogName))
	if !strings.Contains(string(log), "agentslice serve: listening on "+url) {
		t.Fatalf("daemon log:\n%s", log)
	}
}

// TestDaemonStaleFileAndAutoStart: a daemon file naming a dead process is
// stale: status says so and removes it; a serve command then starts the
// daemon (saying so on stderr), and a second command finds that daemon.
func TestDaemonStaleFileAndAutoStart(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command(os.Args[0], "-test.run=^$") // runs no test and exits
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := writeDaemonFile(dir, daemonInfo{PID: dead.Process.Pid, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd("daemon", "status", "-data", dir)
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("removed the stale daemon file of pid %d", dead.Process.Pid)) ||
		!strings.Contains(errOut, "no daemon runs") {
		t.Fatalf("status on a stale file: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, daemonFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stale daemon file was kept: %v", err)
	}
	if err := writeDaemonFile(dir, daemonInfo{PID: dead.Process.Pid, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"script": remoteScript(t), "log_level": "warn"})
	if err := os.WriteFile(filepath.Join(dir, daemonConfigName), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd("threads", "-data", dir)
	m := regexp.MustCompile(`started the daemon at (http://\S+) \(pid (\d+),`).FindStringSubmatch(errOut)
	if code != 0 || m == nil || !strings.HasPrefix(out, "THREAD") {
		t.Fatalf("threads with no daemon: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	pid := 0
	fmt.Sscan(m[2], &pid)
	defer reap(t, pid)
	defer runCmd("daemon", "stop", "-data", dir)
	code, out, errOut = runCmd("send", "-data", dir, "-wait", "a1", "hi")
	if code != 0 || out != "Hello from the scripted model.\n" || errOut != "" {
		t.Fatalf("second command: exit %d, stdout %q, stderr %q (want the running daemon, no start)", code, out, errOut)
	}
	if info, err := readDaemonFile(dir); err != nil || info.PID != pid || info.URL != m[1] {
		t.Fatalf("daemon file = %+v, %v", info, err)
	}
}

// reap waits for a daemon this test process started (it is its parent)
// to exit, asking it to stop first in case the test failed before stop.
func reap(t *testing.T, pid int) {
	t.Helper()
	_ = syscall.Kill(pid, syscall.SIGTERM) // a no-op on a process that already exited
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Errorf("waiting for the daemon pid %d: %v", pid, err)
	}
}

// TestDaemonThatCannotStart: a daemon that exits before it listens (a bad
// serve.json) fails start with its exit and what it logged.
func TestDaemonThatCannotStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, daemonConfigName), []byte(`{"tool_servers": ["ftp://tools"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd("daemon", "start", "-data", dir)
	if code != 1 || out != "" || !strings.Contains(errOut, "the daemon exited (status 1) before it listened") ||
		!strings.Contains(errOut, `field "tool_servers[0]"`) {
		t.Fatalf("start: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, daemonFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a daemon file was left: %v", err)
	}
}

// TestHistoryStopClose: history prints a thread's items; close closes it
// (a later send is the server's 409, saying why); a thread without history
// is a 404 naming it.
func TestHistoryStopClose(t *testing.T) {
	url := startInProcess(t)
	if code, _, errOut := runCmd("send", "-server", url, "-wait", "tt", "what time is it?"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := runCmd("history", "-server", url, "tt")
	want := regexp.MustCompile(`^thread tt: idle, 5 items
user: what time is it\?
assistant: checking the time
tool_call get_time \{"timezone":"UTC"\}
tool_result get_time \(ok\): .+
assistant: it is late
  very late
$`)
	if code != 0 || !want.MatchString(out) {
		t.Fatalf("history: exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	if code, out, _ := runCmd("history", "-server", url, "-from", "4", "tt"); code != 0 || !strings.HasSuffix(out, "items\nassistant: it is late\n  very late\n") {
		t.Fatalf("history -from 4: exit %d, %q", code, out)
	}
	if code, out, _ := runCmd("stop", "-server", url, "tt"); code != 0 || out != "stopping thread tt\n" {
		t.Fatalf("stop: exit %d, %q", code, out)
	}
	c, _ := client.New(url, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := c.Events(ctx, "tt", client.EventOptions{After: 5, Resume: true, Kinds: []string{"stopped", "closed"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if code, out, errOut := runCmd("close", "-server", url, "-reason", "done here", "tt"); code != 0 || out != "closing thread tt\n" {
		t.Fatalf("close: exit %d, %q, %q", code, out, errOut)
	}
	for _, kind := range []string{"stopped", "closed"} {
		if ev, err := s.Next(); err != nil || ev.Kind != kind {
			t.Fatalf("event %+v, %v; want %s", ev, err, kind)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"send", "-server", url, "tt", "more"}, "agentslice send: 409 Conflict: thread tt is closed and takes no more messages (field thread_id)\n", ExitConflict},
		{[]string{"close", "-server", url, "tt"}, "agentslice close: 409 Conflict: thread tt is closed already (field thread_id)\n", ExitConflict},
		{[]string{"history", "-server", url, "nope"}, "agentslice history: 404 Not Found: thread nope has no history yet (field thread_id)\n", ExitNotFound},
		{[]string{"tail", "-server", url, "-after", "0", "-n", "1", "x y"}, "agentslice tail: 400 Bad Request: thread ID in the path: contains a control or space character (field thread_id)\n", ExitRefused},
		{[]string{"stop", "-server", url}, "agentslice stop: missing THREAD: say which thread to stop\n", ExitUsage},
	} {
		if code, _, errOut := runCmd(tc.args...); code != tc.code || errOut != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want exit %d, %q", tc.args[:1], code, errOut, tc.code, tc.want)
		}
	}
}

// askServer is a RAP tool server with one tool, ask, that asks the user
// "Which colour?" (red, green) and returns what was chosen.
func askServer(t *testing.T) string {
	t.Helper()
	answers := make(chan rap.ChoiceResponse, 1)
	respond := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a rap.ChoiceResponse
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answers <- a
	}))
	t.Cleanup(respond.Close)
	kit, err := rap.NewServer(rap.ServerConfig{Name: "asker", Tools: []rap.Tool{
		{Name: "ask", Description: "ask the user", InputSchema: json.RawMessage(`{"type":"object"}`), Run: func(ctx context.Context, c *rap.Call) error {
			if err := c.Choice(ctx, "Which colour?", []string{"red", "green"}, 0, respond.URL); err != nil {
				return err
			}
			select {
			case a := <-answers:
				return c.Result(ctx, fmt.Sprintf("the user chose %d", a.Selected))
			case <-ctx.Done():
				return nil
			}
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(kit)
	t.Cleanup(func() { hs.Close(); kit.Stop() })
	return hs.URL
}

// TestChoose: send -wait shows the choice a turn ends on; choose answers
// it by text (or number), and the turn goes on; a wrong choice or a thread
// waiting for none is refused, naming what is possible.
func TestChoose(t *testing.T) {
	url := startInProcessToken(t, "", askServer(t))
	code, out, errOut := runCmd("send", "-server", url, "-wait", "ch", "pick one")
	if code != 0 || out != "Asking.\nWhich colour?\n  [0] red\n  [1] green\n" || !strings.Contains(errOut, "thread ch waits for a choice") {
		t.Fatalf("send -wait: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := runCmd("choose", "-server", url, "ch", "blue"); code != ExitUsage ||
		!strings.Contains(errOut, `"blue" is not one of the choices of "Which colour?": [0] red, [1] green`) {
		t.Fatalf("choose blue: exit %d, %q", code, errOut)
	}
	c, _ := client.New(url, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := c.Events(ctx, "ch", client.EventOptions{Kinds: []string{"turn"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if code, out, errOut := runCmd("choose", "-server", url, "ch", "Green"); code != 0 || out != "chose [1] green\n" {
		t.Fatalf("choose Green: exit %d, %q, %q", code, out, errOut)
	}
	for {
		ev, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Text == "green it is" {
			break
		}
	}
	th, err := waitIdle(t, c, "ch")
	if err != nil || !strings.Contains(th.Items[4].Text, "the user chose 1") {
		t.Fatalf("thread after the choice: %+v, %v", th, err)
	}
	if code, _, errOut := runCmd("choose", "-server", url, "ch", "0"); code != ExitConflict || errOut != "agentslice choose: thread ch waits for no choice (it is idle)\n" {
		t.Fatalf("choose with none pending: exit %d, %q", code, errOut)
	}
}

// TestTailResumesAfterADrop: when the server drops a stream that fell
// behind, tail reconnects after the last cursor it printed. (A stand-in
// server: a real one drops only a reader that lets its TCP buffers fill; it
// checks the exact requests.)
func TestTailResumesAfterADrop(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		w.Header().Set("Content-Type", "text/event-stream")
		if len(queries) == 1 {
			io.WriteString(w, ": subscribed\n\nid: 1\nevent: message\ndata: {\"kind\":\"message\",\"seq\":1,\"text\":\"hi\"}\n\n"+
				"event: dropped\ndata: {\"error\":\"fell behind\"}\n\n")
			return
		}
		io.WriteString(w, ": subscribed\n\nid: 2\nevent: turn\ndata: {\"kind\":\"turn\",\"seq\":2,\"text\":\"hello\"}\n\n")
	}))
	defer srv.Close()
	code, out, errOut := runCmd("tail", "-server", srv.URL, "-n", "2", "t")
	if code != 0 || out != "user: hi\nassistant: hello\n" || !strings.Contains(errOut, "resuming after 1") {
		t.Fatalf("tail: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if strings.Join(queries, " ") != " after=1" {
		t.Fatalf("queries %q, want a fresh stream, then after=1", queries)
	}
}
