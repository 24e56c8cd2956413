package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/server"
)

// replayServer runs a serve with two scripted models: "a" (the default)
// plays thread "conv" (a tool call, then two replies), "b" answers each
// question its own way.
func replayServer(t *testing.T) string {
	t.Helper()
	var cat model.Catalog
	if err := json.Unmarshal([]byte(`{"default": "a", "models": [
	  {"name": "a", "provider": "scripted", "model_id": "a", "context_window": 100000, "max_output_tokens": 100,
	   "scripted": {"script": {"threads": {"conv": [
	     {"text": "Checking.", "tool_call": {"name": "get_time", "args": {"timezone": "UTC"}}},
	     {"text": "It is noon."},
	     {"text": "Tomorrow is Wednesday."}]}, "default": [{"text": "a elsewhere"}]}}},
	  {"name": "b", "provider": "scripted", "model_id": "b", "context_window": 100000, "max_output_tokens": 100,
	   "scripted": {"script": {"default": [{"text": "b does not know"}], "match": [
	     {"contains": "time", "steps": [{"text": "B: about noon."}]},
	     {"contains": "tomorrow", "steps": [{"text": "B: a Wednesday."}]}]}}}]}`), &cat); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := server.New(ctx, server.Config{Listen: "127.0.0.1:0", Models: &cat, Store: server.StoreMemory,
		ExampleTools: &server.ExampleTools{GetTime: true}}, server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv.URL()
}

// TestForkAndReplay: fork prints the new thread (flags after THREAD too)
// and refuses a bad position; replay forks a finished thread at each of its
// user messages and prints the original and the new reply of each turn,
// the tool call of the first turn not made again by the forks.
func TestForkAndReplay(t *testing.T) {
	url := replayServer(t)
	for _, text := range []string{"What time is it?", "And what day is tomorrow?"} {
		if code, _, errOut := runCmd("send", "-server", url, "-wait", "conv", text); code != 0 {
			t.Fatalf("send: %s", errOut)
		}
	}
	code, out, errOut := runCmd("fork", "-server", url, "conv", "-at", "1", "-model", "b")
	if code != 0 || !strings.HasPrefix(out, "fork_") {
		t.Fatalf("fork: %d %q %s", code, out, errOut)
	}
	forked := strings.TrimSpace(out)
	if code, out, _ := runCmd("history", "-server", url, "-json", forked); code != 0 || !strings.Contains(out, `"inherited": 1`) || !strings.Contains(out, `"model": "b"`) {
		_, src, _ := runCmd("history", "-server", url, "-json", "conv")
		_, again, _ := runCmd("history", "-server", url, "-json", forked)
		t.Fatalf("history of the fork: %s\nof the source: %s\nthe fork read again: %s", out, src, again)
	}
	// -id makes the fork once: run again, it prints the same thread.
	for i := 0; i < 2; i++ {
		if code, out, errOut := runCmd("fork", "-server", url, "-id", "fork_named", "conv", "-at", "1"); code != 0 || strings.TrimSpace(out) != "fork_named" {
			t.Fatalf("fork -id, run %d: %d %q %s", i, code, out, errOut)
		}
	}
	if code, _, errOut := runCmd("fork", "-server", url, "-id", "fork_named", "conv", "-at", "2"); code == 0 || !strings.Contains(errOut, "409") {
		t.Fatalf("fork -id of another position: %d %s", code, errOut)
	}
	if code, _, errOut := runCmd("fork", "-server", url, "-at", "3", "conv"); code == 0 || !strings.Contains(errOut, "409") || !strings.Contains(errOut, "splits tool call") {
		t.Fatalf("fork between a call and its result: %d %s", code, errOut)
	}
	if code, _, errOut := runCmd("fork", "-server", url, "conv"); code == 0 || !strings.Contains(errOut, "missing -at") {
		t.Fatalf("fork without -at: %d %s", code, errOut)
	}

	code, out, errOut = runCmd("replay", "-server", url, "conv", "-model", "b")
	if code != 0 {
		t.Fatalf("replay: %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("replay printed %d lines, want one per user message:\n%s", len(lines), out)
	}
	want := []replayTurn{
		{Turn: 0, At: 0, User: "What time is it?", Original: "Checking.\nIt is noon.", Replay: "B: about noon.", Status: "idle"},
		{Turn: 1, User: "And what day is tomorrow?", Original: "Tomorrow is Wednesday.", Replay: "B: a Wednesday.", Status: "idle"},
	}
	for i, line := range lines {
		var got replayTurn
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d %q: %v", i, line, err)
		}
		if i == 1 {
			want[i].At = got.At
			if got.At < 4 { // after the first turn's call and result
				t.Fatalf("turn 1 forked at %d", got.At)
			}
		}
		want[i].Fork = got.Fork
		if got != want[i] || !strings.HasPrefix(got.Fork, "fork_") {
			t.Fatalf("turn %d: %+v\nwant %+v", i, got, want[i])
		}
		code, hist, _ := runCmd("history", "-server", url, "-from", itoaCmd(got.At), got.Fork)
		if code != 0 || strings.Contains(hist, "tool_call") {
			t.Fatalf("fork %s's own history calls a tool again:\n%s", got.Fork, hist)
		}
	}
	if code, _, errOut := runCmd("replay", "-server", url, "conv"); code == 0 || !strings.Contains(errOut, "missing -model") {
		t.Fatalf("replay without -model: %d %s", code, errOut)
	}
}

func itoaCmd(n int) string { b, _ := json.Marshal(n); return string(b) }
