package server

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/testenv"
)

// typescriptSDK returns node and the directory of sdk/typescript, skipping
// (or failing, with AGENTSLICE_REQUIRE_SERVICES=1) when node or the SDK's
// npm packages are missing.
func typescriptSDK(t *testing.T) (node, dir string) {
	t.Helper()
	node = testenv.Node(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "sdk", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ajv", "package.json")); err != nil {
		msg := "sdk/typescript's npm packages are not installed (run scripts/npm-deps.sh, or `npm ci` in sdk/typescript)"
		if os.Getenv(testenv.RequireVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, dir
}

// TestServeTypeScriptSDK: serve (in process, a scripted model) is pointed
// at the TypeScript SDK's example tool server (run by node) with
// ToolServers, and driven by the SDK's example client (examples/ask.js, run
// by node): the client sends the message, streams the tool call, the
// tool's result and the reply, and reads the thread back.
func TestServeTypeScriptSDK(t *testing.T) {
	t.Parallel()
	node, dir := typescriptSDK(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(target.Close)

	tool := exec.Command(node, filepath.Join(dir, "examples", "wait-for-url.js"), "0")
	out, err := tool.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tool.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tool.Process.Kill(); _ = tool.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		for sc.Scan() {
		}
	}()
	var port string
	select {
	case l := <-line:
		var ok bool
		if port, ok = strings.CutPrefix(l, "LISTENING "); !ok {
			t.Fatalf("the example tool server said %q", l)
		}
	case <-time.After(timeout):
		t.Fatal("the example tool server did not start")
	}

	script := filepath.Join(t.TempDir(), "script.json")
	body := `{"default": [
  {"text": "Let me wait for it.", "tool_call": {"name": "wait_for_url", "args": {"url": "` + target.URL + `/health", "interval_ms": 10}}},
  {"text": "The page is up."}
]}`
	if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{Script: script, ToolServers: []string{"http://127.0.0.1:" + port}})

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ask := exec.CommandContext(ctx, node, filepath.Join(dir, "examples", "ask.js"), srv.URL(), "thr_ts", "Is the page up?")
	var stdout, stderr bytes.Buffer
	ask.Stdout, ask.Stderr = &stdout, &stderr
	if err := ask.Run(); err != nil {
		t.Fatalf("examples/ask.js: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	got := stdout.String()
	for _, want := range []string{
		"sent ",
		`tool_call wait_for_url {"url": "` + target.URL + `/health", "interval_ms": 10}`,
		"tool_result wait_for_url: " + target.URL + "/health answered 200 after 1 attempt(s)",
		"reply: The page is up.",
		"thread thr_ts: ",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("examples/ask.js printed no %q:\n%s\nstderr:\n%s", want, got, stderr.String())
		}
	}
}
