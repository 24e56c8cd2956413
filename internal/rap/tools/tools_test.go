package tools

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/rapkit"
)

func startTools(t *testing.T, tools ...rapkit.Tool) (*raptest.Rig, string) {
	t.Helper()
	rig := raptest.NewRig(t)
	srv, err := rapkit.NewServer(rapkit.ServerConfig{Name: "examples", Tools: tools, Retry: raptest.FastRetry(5), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return rig, raptest.StartServer(t, srv)
}

func TestGetTime(t *testing.T) {
	t.Parallel()
	fixed := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC) // the night Europe/Paris moves to summer time
	rig, base := startTools(t, GetTime(func() time.Time { return fixed }))
	cases := []struct{ args, want string }{
		{`{}`, "2026-03-29T00:30:00Z (Sunday, UTC, UTC)"},
		{`{"timezone":"Asia/Tokyo"}`, "2026-03-29T09:30:00+09:00 (Sunday, Asia/Tokyo, JST)"},
		{`{"timezone":"Europe/Paris"}`, "2026-03-29T01:30:00+01:00 (Sunday, Europe/Paris, CET)"},
		{`{"timezone":"America/Los_Angeles"}`, "2026-03-28T17:30:00-07:00 (Saturday, America/Los_Angeles, PDT)"},
		{`{"timezone":"Mars/Olympus"}`, `error: unknown time zone "Mars/Olympus"`},
	}
	for i, tc := range cases {
		call := "call_" + string(rune('a'+i))
		if err := rig.Invoke(t, base, "thr_t", call, "get_time", tc.args); err != nil {
			t.Fatal(err)
		}
		m := rig.Next(t)
		if m.Kind != runtime.KindToolResult || m.ToolCallID != call || !strings.HasPrefix(m.Text, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.args, m.Text, tc.want)
		}
	}
	if err := rig.Invoke(t, base, "thr_t", "call_z", "get_time", `{"timezone":3}`); err == nil || !strings.Contains(err.Error(), "/timezone") {
		t.Fatalf("bad args: %v, want a schema error naming /timezone", err)
	}
}

func TestRunCommandStreamsOutput(t *testing.T) {
	t.Parallel()
	rig, base := startTools(t, RunCommand(RunCommandConfig{Allowed: []string{"sh"}}))
	script := `echo one; echo two >&2; printf 'no newline'; exit 3`
	if err := rig.Invoke(t, base, "thr_r", "call_1", "run_command", `{"command":"sh","args":["-c",`+quote(script)+`]}`); err != nil {
		t.Fatal(err)
	}
	first := rig.Next(t)
	if first.Kind != runtime.KindToolResult || !first.Subscription || !strings.Contains(first.Text, "started sh -c") {
		t.Fatalf("first message = %+v, want a result that starts a subscription", first)
	}
	msgs := rig.Until(t, func(m runtime.Message) bool { return m.Final })
	var out strings.Builder
	for i, m := range msgs {
		if m.Kind != runtime.KindEvent || !m.Associative || m.ToolCallID != "call_1" {
			t.Fatalf("event %d = %+v, want an associative event of call_1", i, m)
		}
		if !m.Final {
			out.WriteString(m.Text)
		}
	}
	if got := out.String(); got != "one\ntwo\nno newline" {
		t.Fatalf("streamed output %q", got)
	}
	if last := msgs[len(msgs)-1]; last.Text != "exit code 3" {
		t.Fatalf("final event %q, want exit code 3", last.Text)
	}
}

func TestRunCommandLargeOutputIsBatched(t *testing.T) {
	t.Parallel()
	rig, base := startTools(t, RunCommand(RunCommandConfig{Allowed: []string{"sh"}, MaxEventBytes: 1024}))
	// 2000 lines of 10 bytes, and a 5000-byte line of multi-byte runes.
	script := `i=0; while [ $i -lt 2000 ]; do echo "line $(printf %04d $i)"; i=$((i+1)); done; head -c 2500 /dev/zero | tr '\0' 'x' | sed 's/x/é/g'; echo`
	if err := rig.Invoke(t, base, "thr_r", "call_1", "run_command", `{"command":"sh","args":["-c",`+quote(script)+`]}`); err != nil {
		t.Fatal(err)
	}
	rig.Next(t)
	msgs := rig.Until(t, func(m runtime.Message) bool { return m.Final })
	var out strings.Builder
	for _, m := range msgs[:len(msgs)-1] {
		if len(m.Text) > 1024+4 {
			t.Fatalf("an event carries %d bytes, more than MaxEventBytes", len(m.Text))
		}
		out.WriteString(m.Text)
	}
	got := out.String()
	if strings.Count(got, "\n") != 2001 || !strings.Contains(got, "line 1999\n") || strings.Count(got, "é") != 2500 || strings.Contains(got, "\uFFFD") {
		t.Fatalf("output lost or mangled: %d bytes, %d lines", len(got), strings.Count(got, "\n"))
	}
	if len(msgs) > 2000 {
		t.Fatalf("%d events for 2000 lines: lines were not batched", len(msgs))
	}
	if last := msgs[len(msgs)-1]; last.Text != "exit code 0" {
		t.Fatalf("final event %q", last.Text)
	}
}

func TestRunCommandRefusals(t *testing.T) {
	t.Parallel()
	rig, base := startTools(t, RunCommand(RunCommandConfig{Allowed: []string{"sh", "/nonexistent/tool"}}))
	cases := []struct{ args, want string }{
		{`{"command":"rm","args":["-rf","/"]}`, `error: command "rm" is not allowed`},
		{`{"command":"/nonexistent/tool"}`, "error: starting /nonexistent/tool"},
	}
	for i, tc := range cases {
		call := "call_" + string(rune('a'+i))
		if err := rig.Invoke(t, base, "thr_r", call, "run_command", tc.args); err != nil {
			t.Fatal(err)
		}
		if m := rig.Next(t); !strings.HasPrefix(m.Text, tc.want) || m.Subscription {
			t.Errorf("%s: got %+v, want %q", tc.args, m, tc.want)
		}
	}
}

func TestRunCommandTimeout(t *testing.T) {
	t.Parallel()
	rig, base := startTools(t, RunCommand(RunCommandConfig{Allowed: []string{"sh"}, Timeout: 2 * time.Second}))
	if err := rig.Invoke(t, base, "thr_r", "call_1", "run_command", `{"command":"sh","args":["-c","echo before; exec sleep 60"]}`); err != nil {
		t.Fatal(err)
	}
	rig.Next(t)
	msgs := rig.Until(t, func(m runtime.Message) bool { return m.Final })
	if last := msgs[len(msgs)-1]; last.Text != "exit: killed after the time limit" {
		t.Fatalf("final event %q", last.Text)
	}
	if msgs[0].Text != "before\n" {
		t.Fatalf("output before the kill: %q", msgs[0].Text)
	}
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestRunCommandStopsWhenEventsAreRefused: when the runtime refuses an event
// (4xx: the subscription is gone), the command is killed and the call ends,
// even though the command would run forever.
func TestRunCommandStopsWhenEventsAreRefused(t *testing.T) {
	t.Parallel()
	tool := RunCommand(RunCommandConfig{Allowed: []string{"sh"}})
	ended := make(chan error, 1)
	run := tool.Run
	tool.Run = func(ctx context.Context, c *rapkit.Call) error {
		err := run(ctx, c)
		ended <- err
		return err
	}
	rig, base := startTools(t, tool)
	refuseEvents := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"subscription_event"`) {
			http.Error(w, `{"error":"no such subscription"}`, http.StatusNotFound)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		rig.Receiver.ServeHTTP(w, r)
	}))
	t.Cleanup(refuseEvents.Close)
	rig.Signer.BaseURL = refuseEvents.URL + "/callback"
	if err := rig.Invoke(t, base, "thr_r", "call_1", "run_command", `{"command":"sh","args":["-c","while true; do echo tick; done"]}`); err != nil {
		t.Fatal(err)
	}
	if m := rig.Next(t); !m.Subscription {
		t.Fatalf("first message %+v", m)
	}
	select {
	case err := <-ended:
		if err == nil || !strings.Contains(err.Error(), "HTTP 404") {
			t.Fatalf("run ended with %v, want the refused event's error", err)
		}
	case <-time.After(raptest.Timeout):
		t.Fatal("the command kept running after its events were refused")
	}
}

// TestRunCommandGetsNoSecrets: a command sees PATH, never the runtime's
// AGENTSLICE_* variables, with the default environment and a configured
// one.
func TestRunCommandGetsNoSecrets(t *testing.T) {
	t.Setenv("AGENTSLICE_TOKEN", "secret-api-token")
	for name, env := range map[string][]string{"default": nil, "configured": {"PATH=" + os.Getenv("PATH"), "AGENTSLICE_CALLBACK_KEYS=k1:x"}} {
		t.Run(name, func(t *testing.T) {
			rig, base := startTools(t, RunCommand(RunCommandConfig{Allowed: []string{"env"}, Env: env}))
			if err := rig.Invoke(t, base, "thr_r", "call_1", "run_command", `{"command":"env"}`); err != nil {
				t.Fatal(err)
			}
			rig.Next(t)
			var out strings.Builder
			for _, m := range rig.Until(t, func(m runtime.Message) bool { return m.Final }) {
				out.WriteString(m.Text)
			}
			if got := out.String(); strings.Contains(got, "AGENTSLICE_") || !strings.Contains(got, "PATH=") {
				t.Fatalf("the command's environment:\n%s", got)
			}
		})
	}
}
