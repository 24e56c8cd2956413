package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentslice/agentslice/internal/mcp/mcptest"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv"
)

// TestMain gives the tests a home directory of their own: a server built
// without Config.Data falls back to $HOME/.local/share/agentslice, and no
// test may write to (or read) the real one. It then checks for leaked
// goroutines. Started as mcptest's env server, the binary is that instead.
func TestMain(m *testing.M) {
	mcptest.RunHelper() // the env server, when this binary is started as one
	home, err := os.MkdirTemp("", "agentslice-server-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	os.Unsetenv("XDG_DATA_HOME")
	os.Unsetenv(DataDirEnv)
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.RemoveAll(home)
	os.Exit(code)
}

// timeout bounds every wait of these tests.
const timeout = 30 * time.Second

// logBuffer collects a server's log; it is printed when the test fails.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startServer starts a server for cfg on a free port of 127.0.0.1; it is
// stopped when the test ends.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	return startServerOpts(t, cfg, Options{})
}

// startServerOpts is startServer with options (a model, say).
func startServerOpts(t *testing.T, cfg Config, opts Options) *Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Store == "" && cfg.Data == "" {
		cfg.Data = t.TempDir() // the default sqlite store, in a directory of its own
	}
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	retry := rap.RetryPolicy{Attempts: 5, Base: time.Millisecond, Max: 20 * time.Millisecond, Total: 10 * time.Second}
	opts.Logger, opts.RAPRetry, opts.Getenv = logger, &retry, func(string) string { return "" }
	srv, err := New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Stop()
		// AGENTSLICE_TEST_SERVER_LOG=1 prints the log of passing tests too.
		if t.Failed() || os.Getenv("AGENTSLICE_TEST_SERVER_LOG") != "" {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	return srv
}

func testdata(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// do sends one request, checks the answer against docs/openapi.yaml and
// decodes it into out (when not nil).
func do(t *testing.T, method, url, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	checkAnswer(t, req, resp, b) // every answer is as docs/openapi.yaml describes it
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: decoding: %v", method, url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// postMessage POSTs a user message and checks the 202.
func postMessage(t *testing.T, srv *Server, thread, body string) messageResponse {
	t.Helper()
	var resp messageResponse
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/messages", body, &resp); code != http.StatusAccepted {
		t.Fatalf("POST message: status %d, body %+v", code, resp)
	}
	return resp
}

func getThread(t *testing.T, srv *Server, thread string) threadResponse {
	t.Helper()
	var th threadResponse
	if code := do(t, http.MethodGet, srv.URL()+"/threads/"+thread, "", &th); code != http.StatusOK {
		t.Fatalf("GET thread %s: status %d", thread, code)
	}
	return th
}

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	ID, Event string
	Data      StreamEvent
}

// stream is an open event stream read by a goroutine the test owns.
type stream struct {
	cancel context.CancelFunc
	events chan sseEvent
	done   chan struct{}
	err    error // set before done is closed
}

// openStream subscribes to url and returns once the server said the
// subscription is live (its first comment line).
func openStream(t *testing.T, url string) *stream {
	t.Helper()
	return openStreamWith(t, url, "")
}

// openStreamWith opens a stream sending lastID as Last-Event-ID (when
// not empty), as a reconnecting browser does.
func openStreamWith(t *testing.T, url, lastID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("GET %s: %d %s %s", url, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	s := &stream{cancel: cancel, events: make(chan sseEvent, 1024), done: make(chan struct{})}
	live := make(chan struct{})
	go func() { // owned by the test: ends when the body is closed (close)
		defer close(s.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var ev sseEvent
		var data string
		first := true
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ":"):
				if first {
					close(live)
					first = false
				}
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				data = line[6:]
			case line == "":
				if data != "" {
					if err := json.Unmarshal([]byte(data), &ev.Data); err != nil {
						s.err = fmt.Errorf("event data %q: %v", data, err)
						return
					}
					if err := checkEventData(ev.Event, []byte(data)); err != nil { // as docs/openapi.yaml describes it
						s.err = err
						return
					}
					s.events <- ev
				}
				ev, data = sseEvent{}, ""
			}
		}
		s.err = sc.Err()
	}()
	t.Cleanup(s.close)
	select {
	case <-live:
	case <-s.done:
		t.Fatalf("stream %s ended before it was live: %v", url, s.err)
	case <-time.After(timeout):
		t.Fatalf("stream %s: no subscription comment", url)
	}
	return s
}

// close ends the stream and waits for its reader.
func (s *stream) close() {
	s.cancel()
	<-s.done
}

// next returns the next event, failing the test after the timeout.
func (s *stream) next(t *testing.T) sseEvent {
	t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case <-s.done:
		select {
		case ev := <-s.events:
			return ev
		default:
		}
		t.Fatalf("stream ended: %v", s.err)
	case <-time.After(timeout):
		t.Fatal("no event within the timeout")
	}
	return sseEvent{}
}

// nextOf returns the next event of one of the kinds, skipping the others.
func (s *stream) nextOf(t *testing.T, kinds ...string) sseEvent {
	t.Helper()
	for {
		ev := s.next(t)
		if slices.Contains(kinds, ev.Event) {
			return ev
		}
	}
}

func timeoutC() <-chan time.Time { return time.After(timeout) }

// waitIdle waits until the system has no thread with work.
func waitIdle(t *testing.T, srv *Server) {
	t.Helper()
	select {
	case <-srv.System().Idle():
	case <-time.After(timeout):
		t.Fatal("the system did not become idle")
	}
}

// everythingServer returns the path of the npm MCP reference server
// (pinned in the repo-root package.json; `npm ci` installs it). Without
// it, or without node, the test is skipped, unless
// AGENTSLICE_REQUIRE_SERVICES=1.
func everythingServer(t *testing.T) string {
	t.Helper()
	return testenv.NodeModule(t, "@modelcontextprotocol/server-everything/dist/index.js")
}

// kinds lists the kinds of items, for failure messages.
func kinds(items []runtime.Item) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(it.Kind.String())
		if it.Name != "" {
			b.WriteString("(" + it.Name + ")")
		}
	}
	return b.String()
}
