package rapcheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap/tools"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/rapkit"
)

// run checks base and returns the report and its printed table.
func run(t *testing.T, base string, probes map[string]json.RawMessage) (*Report, string) {
	return runWithin(t, base, probes, 20*time.Second)
}

func runWithin(t *testing.T, base string, probes map[string]json.RawMessage, timeout time.Duration) (*Report, string) {
	t.Helper()
	rep, err := Run(context.Background(), Config{Base: base, Timeout: timeout, Probes: probes})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Print(&out)
	return rep, out.String()
}

// requireAllPass fails on every row that is not PASS, naming it.
func requireAllPass(t *testing.T, rep *Report, table string) {
	t.Helper()
	for _, r := range rep.Results {
		if r.Status != Pass {
			t.Errorf("%s: %s %s", r.Check, r.Status, r.Detail)
		}
	}
	if t.Failed() {
		t.Logf("the report:\n%s", table)
	}
}

// flaky answers 503 to its first two GETs and 200 after: what wait_for_url
// waits for.
func flaky(t *testing.T) string {
	var hits atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// TestGoKitPasses: a server built with rapkit offering the in-repo
// get_time (read-only, takes {}: probed without being named) and
// run_command (not read-only: never invoked but with refused arguments)
// passes every check.
func TestGoKitPasses(t *testing.T) {
	t.Parallel()
	srv, err := rapkit.NewServer(rapkit.ServerConfig{Name: "kit", Tools: []rapkit.Tool{tools.GetTime(nil), tools.RunCommand(tools.RunCommandConfig{})}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	rep, table := run(t, hs.URL, nil)
	requireAllPass(t, rep, table)
	if !strings.Contains(table, "PASS  probe get_time") {
		t.Errorf("get_time was not probed:\n%s", table)
	}
	if strings.Contains(table, "probe run_command") {
		t.Errorf("run_command (not read-only) was invoked as a probe:\n%s", table)
	}
}

// repoRoot is the module's root, two levels above this package.
func repoRoot(t *testing.T) string {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// startServer runs a tool server that prints "LISTENING <port>" and
// returns its base URL; it is killed when the test ends.
func startServer(t *testing.T, dir string, env []string, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s %v: %v", bin, args, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case line <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-line:
		port, ok := strings.CutPrefix(l, "LISTENING ")
		if !ok {
			t.Fatalf("%s %v said %q", bin, args, l)
		}
		return "http://127.0.0.1:" + port
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %v did not start", bin, args)
	}
	return ""
}

// typescriptSDK skips (or fails, with AGENTSLICE_REQUIRE_SERVICES=1) when
// node or the SDK's npm packages are missing.
func typescriptSDK(t *testing.T) string {
	node := testenv.Node(t)
	if _, err := os.Stat(filepath.Join(repoRoot(t), "sdk", "typescript", "node_modules", "ajv", "package.json")); err != nil {
		msg := "sdk/typescript's npm packages are not installed (run scripts/npm-deps.sh)"
		if os.Getenv(testenv.RequireVar) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node
}

func python(t *testing.T) string {
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv(testenv.RequireVar) == "1" {
			t.Fatal("python3 is not on PATH")
		}
		t.Skip("python3 is not on PATH")
	}
	return p
}

// TestExamplesPass: the example tool written in TypeScript and in Python
// (examples/typescript, examples/python; the Go one is tested beside it),
// and the TypeScript SDK's own example, pass every check, each with a probe
// that waits for a URL answering 503 twice, then 200.
func TestExamplesPass(t *testing.T) {
	root := repoRoot(t)
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) string
		probe string
	}{
		{"typescript", func(t *testing.T) string {
			return startServer(t, root, nil, typescriptSDK(t), filepath.Join("examples", "typescript", "wait_for_url.mjs"), "0")
		}, `{"url": %q, "interval_seconds": 0.01}`},
		{"python", func(t *testing.T) string {
			py := filepath.Join(root, "sdk", "python")
			return startServer(t, py, []string{"PYTHONPATH=" + py, "PYTHONDONTWRITEBYTECODE=1"}, python(t),
				filepath.Join(root, "examples", "python", "wait_for_url.py"), "0")
		}, `{"url": %q, "interval_seconds": 0.01}`},
		{"typescript-sdk-example", func(t *testing.T) string {
			return startServer(t, root, nil, typescriptSDK(t), filepath.Join("sdk", "typescript", "examples", "wait-for-url.js"), "0")
		}, `{"url": %q, "interval_ms": 10}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := tc.start(t)
			args, _ := json.Marshal(map[string]any{"url": flaky(t)})
			args = json.RawMessage(strings.Replace(string(args), "}", ","+strings.SplitN(tc.probe, ",", 2)[1], 1))
			rep, table := run(t, base, map[string]json.RawMessage{"wait_for_url": args})
			requireAllPass(t, rep, table)
			if !strings.Contains(table, "PASS  probe wait_for_url") {
				t.Errorf("wait_for_url was not probed:\n%s", table)
			}
		})
	}
}

// broken is a tool server that gets RAP wrong in the ways a hand-written
// one does: it posts results to the callback URL without its query (so
// without the signature) when stripQuery is set, never echoes call_id,
// answers a body that is not JSON with 500, and answers /tool_call_status 500 and /cancel_tool_call 404.
func broken(t *testing.T, stripQuery bool) string {
	var base string
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+rapkit.ToolsetPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name":"broken","endpoint":"`+base+`/invoke","tools":[{"name":"echo","description":"echo",
			"inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},"annotations":{"readOnly":true}}]}`)
	})
	mux.HandleFunc("POST /invoke", func(w http.ResponseWriter, r *http.Request) {
		var inv rapkit.Invocation
		if json.NewDecoder(r.Body).Decode(&inv) != nil {
			http.Error(w, "crashed", http.StatusInternalServerError)
			return
		}
		if inv.CallbackURL == "" {
			return
		}
		go func() {
			u, _ := url.Parse(inv.CallbackURL)
			if stripQuery {
				u.RawQuery = ""
			}
			text := "done"
			body, _ := json.Marshal(rapkit.ToolResult{Type: rapkit.TypeToolResult, GroupID: inv.GroupID, ID: inv.ID, Text: &text})
			resp, err := http.Post(u.String(), "application/json", bytes.NewReader(body))
			if err == nil {
				resp.Body.Close()
			}
		}()
	})
	mux.HandleFunc("POST "+rapkit.ToolCallStatusPath, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not implemented", http.StatusInternalServerError)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	base = s.URL
	return base
}

// TestBrokenServerFails: each fault of the broken server is a FAIL row
// saying what was wrong, and the report fails. (The waits for callbacks
// that never come are short: nothing would come later.)
func TestBrokenServerFails(t *testing.T) {
	t.Parallel()
	rep, table := runWithin(t, broken(t, true), nil, time.Second)
	if !rep.Failed() {
		t.Fatalf("the broken server passed:\n%s", table)
	}
	for _, want := range []string{
		"FAIL  unknown_operation      answered 200 but: no tool_result: no callback within 1s (a tool MUST send a result for every invocation it accepts)",
		`WARN  malformed_invocation   {"operation": "x", answered HTTP 500: a runtime retries 5xx`,
		`FAIL  status_unknown_call    /tool_call_status answered HTTP 500 for an unknown call, want 200 {"alive": false}`,
		"FAIL  cancel_unknown_call    /cancel_tool_call answered HTTP 404, want 200",
		"FAIL  callback_signature     2 callback(s) did not come to the signed callback URL as given (tools MUST post to it unchanged): POST /rap/callback: not a callback URL this checker gave out",
		"SKIP  call_id_echo",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the report lacks %q:\n%s", want, table)
		}
	}
}

// TestInvalidToolsetFails: a toolset a runtime would reject fails
// discovery with the field at fault, and nothing is invoked.
func TestInvalidToolsetFails(t *testing.T) {
	t.Parallel()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"name":"bad","endpoint":"/invoke","tools":[{"name":"has space","description":"d","inputSchema":{"type":"object"}}]}`)
	}))
	t.Cleanup(s.Close)
	rep, table := run(t, s.URL, nil)
	if !rep.Failed() || !strings.Contains(table, `FAIL  discovery   the toolset is invalid (a runtime rejects all of it): field "tools[0].name"`) ||
		!strings.Contains(table, "SKIP  invocation") {
		t.Errorf("want discovery to fail naming tools[0].name and the rest skipped:\n%s", table)
	}
}

// TestResultWithoutCallIDFails: results that reach the signed URL but do
// not echo the invocation's call_id fail call_id_echo (and only that).
func TestResultWithoutCallIDFails(t *testing.T) {
	t.Parallel()
	rep, table := runWithin(t, broken(t, false), map[string]json.RawMessage{"echo": json.RawMessage(`{"text":"hi"}`)}, 5*time.Second)
	if !rep.Failed() || !strings.Contains(table, "FAIL  call_id_echo           3 result(s) did not echo the invocation's call_id") ||
		!strings.Contains(table, "PASS  callback_signature") || !strings.Contains(table, "PASS  probe echo") {
		t.Errorf("want call_id_echo to fail for the 3 results, the signature and the probe to pass:\n%s", table)
	}
}

// TestWaitsForAServerJustStarted: with Wait, a server that is not
// listening yet is asked again until it is; without it, discovery fails at
// once, saying why.
func TestWaitsForAServerJustStarted(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	rep, err := Run(context.Background(), Config{Base: "http://" + addr, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Status != Fail || !strings.Contains(r.Detail, "connection refused") {
		t.Errorf("without Wait: %+v", r)
	}
	srv, _ := rapkit.NewServer(rapkit.ServerConfig{Name: "late", Tools: []rapkit.Tool{tools.GetTime(nil)}})
	_ = srv.Start(context.Background())
	t.Cleanup(srv.Stop)
	done := make(chan *Report)
	go func() {
		rep, _ := Run(context.Background(), Config{Base: "http://" + addr, Timeout: 10 * time.Second, Wait: time.Minute})
		done <- rep
	}()
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("the port was taken meanwhile: %v", err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	rep = <-done
	if rep.Failed() {
		var out bytes.Buffer
		rep.Print(&out)
		t.Errorf("with Wait, the server started late failed:\n%s", out.String())
	}
}
