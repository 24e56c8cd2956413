package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv"
)

// pythonBinary returns the path of python3 for the Python SDK's tests: skipped
// without it, failed when AGENTSLICE_REQUIRE_SERVICES=1.
func pythonBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		msg := "python3 is not on PATH (install Python 3.10 or later to test sdk/python)"
		if os.Getenv(testenv.RequireVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// pyRepoRoot is the module's root, two levels above this package.
func pyRepoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// startPython runs a Python tool server (args after python3, from
// sdk/python) that prints "LISTENING <port>", and returns its base URL.
func startPython(t *testing.T, python string, args ...string) string {
	t.Helper()
	root := pyRepoRoot(t)
	cmd := exec.Command(python, args...)
	cmd.Dir = filepath.Join(root, "sdk", "python")
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(root, "sdk", "python"), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the python example: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l := <-line:
		port, ok := strings.CutPrefix(l, "LISTENING ")
		if !ok {
			t.Fatalf("the python tool server %v said %q", args, l)
		}
		return "http://127.0.0.1:" + port
	case <-timeoutC():
		t.Fatalf("the python tool server %v did not start", args)
	}
	return ""
}

// pyFlakyService answers 503 to its first two GETs and 200 after: the service
// wait_for_url waits for.
func pyFlakyService(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= 2 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(svc.Close)
	return svc, &hits
}

// TestServePythonSDK: serve loads the toolset of the Python example tool
// server (sdk/python's ToolServer), the scripted model calls wait_for_url
// on a service that answers 503 twice before 200, and the subscription's
// result, two associative progress events and the final event come back
// through the signed callback URL into the thread's history. The Python
// serve client (sdk/python/tests/serve_check.py, under unittest) drives the
// thread: it sends the message, follows the event stream and reads the
// thread. A second Python server's tool asks the user (Call.ask); the
// client answers through serve, which POSTs the answer to the tool's
// response_url, and the result's display_as reaches the event stream.
func TestServePythonSDK(t *testing.T) {
	t.Parallel()
	python := pythonBinary(t)
	tools := startPython(t, python, filepath.Join(pyRepoRoot(t), "examples", "python", "wait_for_url.py"), "0")
	fixture := startPython(t, python, "-m", "tests.fixture_server", "0")
	svc, hits := pyFlakyService(t)

	// The toolset the Python server offers passes the runtime's decoder.
	resp, err := http.Get(tools + rap.ToolsetPath)
	if err != nil {
		t.Fatal(err)
	}
	var raw json.RawMessage
	err = json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := rap.DecodeToolset(raw)
	if err != nil || len(ts.Tools) != 1 || ts.Tools[0].Name != "wait_for_url" || ts.Endpoint != tools+"/invoke" ||
		ts.Tools[0].Annotations == nil || !ts.Tools[0].Annotations.LongRunning {
		t.Fatalf("toolset %s: %+v, %v", raw, ts, err)
	}

	script := fmt.Sprintf(`{"default": [
	  {"text": "Waiting for it.", "tool_call": {"name": "wait_for_url", "args": {"url": %q, "interval_seconds": 0.01, "timeout_seconds": 60}}},
	  {"text": "Watching."}, {"text": "Noted."}, {"text": "Noted."}, {"text": "It is up."}, {"text": "Noted."}, {"text": "Noted."}
	], "threads": {"thr_py_choice": [
	  {"text": "Asking first.", "tool_call": {"name": "confirm_deploy", "args": {"target": "staging"}}},
	  {"text": "Deployed."}
	]}}`, svc.URL+"/health")
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{Script: path, ToolServers: []string{tools, fixture}})

	const thread = "thr_py"
	// The check follows an event stream: bound it, so a result that never
	// comes fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout)
	defer cancel()
	check := exec.CommandContext(ctx, python, "-m", "unittest", "-v", "tests.serve_check")
	check.Dir = filepath.Join(pyRepoRoot(t), "sdk", "python")
	check.Env = append(os.Environ(), "AGENTSLICE_SERVE_URL="+srv.URL(), "AGENTSLICE_THREAD="+thread, "AGENTSLICE_CHOICE_THREAD=thr_py_choice", "PYTHONDONTWRITEBYTECODE=1")
	out, err := check.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") || strings.Contains(string(out), "skipped") {
		t.Fatalf("the Python serve client check failed: %v\n%s", err, out)
	}

	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	var injected []string
	var result runtime.Item
	for _, it := range th.Items {
		switch {
		case it.Kind == runtime.ItemToolResult && it.Name == "wait_for_url":
			result = it
		case it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName:
			injected = append(injected, it.Text)
		}
	}
	if !strings.HasPrefix(result.Text, "watching "+svc.URL) || result.IsError {
		t.Fatalf("the call's result is %+v; history %s", result, kinds(th.Items))
	}
	want := []string{"attempt 1: HTTP 503", "attempt 2: HTTP 503", "returned 200 after 3 attempts"}
	if len(injected) != len(want) || !slices.ContainsFunc(injected, func(s string) bool { return strings.HasSuffix(s, want[2]) }) {
		t.Fatalf("events %q, want %q", injected, want)
	}
	for i, w := range want[:2] {
		if !strings.HasPrefix(injected[i], w) {
			t.Fatalf("event %d is %q, want %q...", i, injected[i], w)
		}
	}
	if hits.Load() != 3 || len(th.State.Subscriptions) != 0 || th.State.Pending != nil || th.Status != "idle" {
		t.Fatalf("service hit %d times; status %q, subscriptions %+v, pending %+v", hits.Load(), th.Status, th.State.Subscriptions, th.State.Pending)
	}
	ch := getThread(t, srv, "thr_py_choice")
	if !slices.ContainsFunc(ch.Items, func(it runtime.Item) bool {
		return it.Kind == runtime.ItemToolResult && it.Name == "confirm_deploy" && it.Text == "deployed to staging"
	}) || ch.Status != "idle" || ch.State.Pending != nil {
		t.Fatalf("the choice thread: status %q, pending %+v, history %s", ch.Status, ch.State.Pending, kinds(ch.Items))
	}
	if dead, n := srv.System().DeadLetters(); n != 0 {
		t.Fatalf("dead letters: %+v", dead)
	}
}
