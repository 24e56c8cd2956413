package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// choiceTool is a RAP tool server in the test process: "ask" updates a
// view, asks the user to choose, and answers with the choice (and a
// display segment) once its response_url hears it; it outlives the serve
// processes the test kills.
func choiceTool(t *testing.T) (url string, answers <-chan rap.ChoiceResponse) {
	t.Helper()
	got := make(chan rap.ChoiceResponse, 4) // seen by the test
	toTool := make(chan rap.ChoiceResponse, 4)
	respond := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a rap.ChoiceResponse
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- a
		toTool <- a
	}))
	t.Cleanup(respond.Close)
	kit, err := rap.NewServer(rap.ServerConfig{Name: "asker", Tools: []rap.Tool{{Name: "ask", Description: "ask the user",
		InputSchema: json.RawMessage(`{"type":"object"}`), Run: func(ctx context.Context, c *rap.Call) error {
			if err := c.View(ctx, "progress", map[string]any{"step": "asking"}); err != nil {
				return err
			}
			if err := c.Choice(ctx, "Deploy now?", []string{"no", "yes"}, 0, respond.URL); err != nil {
				return err
			}
			select {
			case a := <-toTool:
				text := fmt.Sprintf("the user chose %d", a.Selected)
				return c.Post(ctx, &rap.ToolResult{Type: rap.TypeToolResult, GroupID: c.GroupID, ID: c.ID, Text: &text,
					DisplayAs: []rap.DisplaySegment{{Type: "text", Content: json.RawMessage(`"chose ` + fmt.Sprint(a.Selected) + `"`)}}})
			case <-ctx.Done():
				return nil
			}
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(kit)
	t.Cleanup(func() { hs.Close(); kit.Stop() })
	return hs.URL, got
}

type choiceThread struct {
	Status string `json:"status"`
	Choice *struct {
		CallID  string   `json:"call_id"`
		Prompt  string   `json:"prompt"`
		Choices []string `json:"choices"`
	} `json:"choice"`
	Items []runtime.Item `json:"items"`
}

// pollThread GETs the thread until its status is want.
func pollThread(t *testing.T, c *child, thread, want string) choiceThread {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var th choiceThread
	for time.Now().Before(deadline) {
		th = choiceThread{}
		if resp, err := http.Get(c.url + "/threads/" + thread); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&th)
			resp.Body.Close()
			if th.Status == want {
				return th
			}
		}
		waitOrDeadline(10 * time.Millisecond) // polling a child process's API
	}
	t.Fatalf("thread %s is %q, never %q; log:\n%s", thread, th.Status, want, c.logs.String())
	return th
}

// TestServeKeepsChoiceThroughKill: a thread waits for a person's choice;
// serve is SIGKILLed and started again on the same data directory and
// address; the thread still waits for that choice, its view is there, the
// answer given to the new process reaches the tool, and the tool's result
// (with its display segment) ends the turn.
func TestServeKeepsChoiceThroughKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills server processes")
	}
	toolURL, answers := choiceTool(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	script, _ := json.Marshal(map[string]any{"default": []map[string]any{
		{"text": "Asking.", "tool_call": map[string]any{"name": "ask", "args": map[string]any{}}},
		{"text": "Deployed as you chose."},
	}})
	scriptPath := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(scriptPath, script, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "-listen", addr, "-data", t.TempDir(), "-script", scriptPath, "-tool-server", toolURL, "-log-level", "warn"}

	first := startChild(t, args...)
	resp, err := http.Post(first.url+"/threads/kc/messages", "application/json", bytes.NewReader([]byte(`{"id":"m1","text":"deploy"}`)))
	if err != nil || resp.StatusCode != http.StatusAccepted {
		first.kill()
		t.Fatalf("POST: %v %v", resp, err)
	}
	resp.Body.Close()
	before := pollThread(t, first, "kc", "waiting_for_choice")
	first.kill()

	second := startChild(t, args...)
	defer second.kill()
	th := pollThread(t, second, "kc", "waiting_for_choice")
	if th.Choice == nil || th.Choice.Prompt != "Deploy now?" || th.Choice.CallID != before.Choice.CallID {
		t.Fatalf("after kill -9 the choice is %+v (before: %+v)", th.Choice, before.Choice)
	}
	vr, err := http.Get(second.url + "/threads/kc/views")
	if err != nil {
		t.Fatal(err)
	}
	views, _ := io.ReadAll(vr.Body)
	vr.Body.Close()
	if !bytes.Contains(views, []byte(`"progress":{"step":"asking"}`)) {
		t.Fatalf("views after kill -9: %s", views)
	}

	ar, err := http.Post(second.url+"/threads/kc/choices/"+th.Choice.CallID, "application/json", bytes.NewReader([]byte(`{"selected":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(ar.Body)
	ar.Body.Close()
	if ar.StatusCode != http.StatusOK {
		t.Fatalf("answering after kill -9: %d %s", ar.StatusCode, body)
	}
	select {
	case a := <-answers:
		if a.Selected != 1 {
			t.Fatalf("the tool got %+v", a)
		}
	case <-time.After(time.Minute):
		t.Fatal("the tool never got the answer")
	}
	done := pollThread(t, second, "kc", "idle")
	var result, display bool
	reply := ""
	for _, it := range done.Items { // the answer's record may come before or after the result
		result = result || (it.Kind == runtime.ItemToolResult && it.CallID == th.Choice.CallID && it.Text == "the user chose 1")
		display = display || (it.Kind == runtime.ItemMarker && it.Name == runtime.DisplayMarkerName && it.CallID == th.Choice.CallID)
		if it.Kind == runtime.ItemAssistant {
			reply = it.Text
		}
	}
	if !result || !display || reply != "Deployed as you chose." {
		t.Fatalf("after the answer: result %v, display %v, reply %q, items %+v", result, display, reply, done.Items)
	}
}
