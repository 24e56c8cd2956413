package server

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestServeSandboxQuestionSurvivesRestart: a command that asks for the
// network waits for the person's answer when serve stops; the next serve
// on the same data and sandboxes still has the thread waiting for that
// choice (the toolset asks it again on the same call, with the same
// response_url, and tool_call_status says the call is alive), the
// person's answer there reaches the toolset and runs the command, and its
// final event ends the turn.
// (Before, the restart failed the call and the answer had nowhere to go.)
func TestServeSandboxQuestionSurvivesRestart(t *testing.T) {
	t.Parallel()
	repo, root, data := gitRepo(t), t.TempDir(), t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // the same address for both servers, so the callback URLs stay good
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`{"default": [
  {"text": "Fetching.", "tool_call": {"name": "run_command", "args": {"command": "echo fetched > fetched.txt", "network": true}}},
  {"text": "The fetch runs in the background."},
  {"text": "The fetch finished."},
  {"text": "Noted."}
]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Listen: addr, Data: data, Script: script,
		CallbackKeys: "k1:c2FtZS1rZXlzLWFjcm9zcy1ib3RoLWNvbnZlcnNhdGlvbnMtIQ",
		Sandbox:      &Sandbox{Repo: repo, Root: root, Jail: "off", OutputEvery: "10ms"}}
	first := startServer(t, cfg)
	const thread = "thr_ask_restart"
	postMessage(t, first, thread, `{"text":"Fetch it."}`)
	poll := func(srv *Server) (th threadResponse) {
		do(t, "GET", srv.URL()+"/threads/"+thread, "", &th) // 404 until the thread is stored
		return th
	}
	var asked threadResponse
	waitUntil(t, "the question", func() bool {
		asked = poll(first)
		return asked.Status == "waiting_for_choice" && asked.Choice != nil
	})
	first.Stop()

	second := startServer(t, cfg)
	var again threadResponse
	waitUntil(t, "the question after the restart", func() bool {
		again = poll(second)
		return again.Status == "waiting_for_choice" && again.Choice != nil
	})
	if again.Choice.CallID != asked.Choice.CallID || again.Choice.Prompt != asked.Choice.Prompt {
		t.Fatalf("after the restart the choice is %+v (before: %+v)", again.Choice, asked.Choice)
	}
	var out map[string]any
	if code := do(t, "POST", second.URL()+"/threads/"+thread+"/choices/"+again.Choice.CallID, `{"selected":0}`, &out); code != 200 {
		t.Fatalf("answering after the restart: %d %v", code, out)
	}
	waitUntil(t, "the command's end", func() bool {
		th := poll(second)
		return slices.ContainsFunc(th.Items, func(it runtime.Item) bool { return it.Text == "The fetch finished." })
	})
	th := getThread(t, second, thread)
	var final string
	for _, it := range th.Items {
		if it.Kind == runtime.ItemToolResult && it.Name == runtime.InjectedToolName {
			final = it.Text
		}
	}
	if !strings.Contains(final, "finished: exit code 0") {
		t.Fatalf("the command's final event: %q (%s)", final, kinds(th.Items))
	}
	sb, err := second.sandbox.Lookup(t.Context(), thread)
	if err != nil || sb == nil {
		t.Fatalf("sandbox: %v %v", sb, err)
	}
	if b, err := os.ReadFile(filepath.Join(sb.Dir, "fetched.txt")); err != nil || string(b) != "fetched\n" {
		t.Fatalf("fetched.txt: %q %v", b, err)
	}
}
