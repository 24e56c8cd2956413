package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestTokenRequiredOffLoopback: serve refuses to listen on anything but
// loopback without a token; the environment sets one.
func TestTokenRequiredOffLoopback(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), Config{Listen: "0.0.0.0:0"}, Options{Logger: quietLogger(), Getenv: func(string) string { return "" }})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "auth_token" {
		t.Fatalf("New on 0.0.0.0 without a token = %v, want a ConfigError naming auth_token", err)
	}
	env := func(k string) string {
		if k == TokenEnv {
			return "s3cret"
		}
		return ""
	}
	srv, err := New(context.Background(), Config{Listen: "0.0.0.0:0"}, Options{Logger: quietLogger(), Getenv: env})
	if err != nil || srv.token != "s3cret" {
		t.Fatalf("New with %s: %v", TokenEnv, err)
	}
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "localhost:1": true, ":1": false, "10.0.0.1:1": false} {
		if loopback(addr) != want {
			t.Errorf("loopback(%q) = %v", addr, !want)
		}
	}
}

// TestTokenGuardsAPIAndTools: with a token, the API and the in-process
// tool servers answer 401 without it; the console page, liveness and the
// signed callbacks stay open; event streams take it as access_token; the
// runtime's own calls to the in-process tools carry it, so agents work.
func TestTokenGuardsAPIAndTools(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{AuthToken: "s3cret", Script: testdata(t, "get_time_script.json"), ExampleTools: &ExampleTools{GetTime: true}})
	call := func(method, path, token string) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL()+path, strings.NewReader(`{"text":"What time is it?"}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/threads", "", http.StatusUnauthorized},
		{"GET", "/threads", "wrong", http.StatusUnauthorized},
		{"GET", "/threads", "s3cret", http.StatusOK},
		{"GET", "/dead_letters", "", http.StatusUnauthorized},
		{"POST", "/threads/t/stop", "", http.StatusUnauthorized},
		{"GET", "/events?access_token=wrong", "", http.StatusUnauthorized},
		{"POST", "/tools/examples/cancel_tool_call", "", http.StatusUnauthorized},
		{"POST", "/tools/examples/close_thread", "", http.StatusUnauthorized},
		{"POST", "/tools/examples/tool_call_status", "", http.StatusUnauthorized},
		{"GET", "/tools/examples/.well-known/rap-toolset", "", http.StatusUnauthorized},
		{"GET", "/", "", http.StatusOK},
		{"GET", "/console/console.js", "", http.StatusOK},
		{"GET", "/healthz", "", http.StatusOK},
		{"POST", CallbackPath, "", http.StatusForbidden}, // signed URLs: no token, a bad signature
	} {
		if got := call(c.method, c.path, c.token); got != c.want {
			t.Errorf("%s %s (token %q): %d, want %d", c.method, c.path, c.token, got, c.want)
		}
	}
	events := openStream(t, srv.URL()+"/threads/thr_auth/events?access_token=s3cret")
	if code := call("POST", "/threads/thr_auth/messages", "s3cret"); code != http.StatusAccepted {
		t.Fatalf("POST message: %d", code)
	}
	// The final turn needs the get_time result, which needs the runtime's
	// token on the in-process tool server.
	for {
		ev := events.nextOf(t, "turn", "error")
		if ev.Event != "turn" {
			t.Fatalf("event %+v", ev.Data)
		}
		if ev.Data.Text == "It is noon, UTC." {
			return
		}
	}
}

// TestStalledUploadIsCut: a client that sends headers and part of a body,
// then nothing, is cut after limits.read_timeout instead of holding a
// connection forever; event streams outlive that timeout.
func TestStalledUploadIsCut(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Limits: Limits{ReadTimeout: "100ms", KeepAlive: "20ms"}})
	addr := strings.TrimPrefix(srv.URL(), "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /threads/t/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"text\":"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(timeout)) // the test's bound, not the server's
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the stalled upload was still open after %v", timeout)
	}
	if len(got) > 0 && !strings.Contains(string(got), "400 Bad Request") {
		t.Fatalf("answer to a stalled upload: %q", got)
	}

	// A stream lives on past the read timeout: keep-alives go on, and an
	// event still arrives after ten of them (200ms > 100ms).
	req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/threads/thr_long/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < 10 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), ": keep-alive") {
			n++
		}
	}
	postMessage(t, srv, "thr_long", `{"text":"hello"}`)
	for sc.Scan() {
		if sc.Text() == "event: turn" {
			return
		}
	}
	t.Fatalf("the stream ended before the turn: %v", sc.Err())
}
