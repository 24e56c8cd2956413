package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// TestSwitchModel: a person switches a thread's model; the switch is in
// the thread's history and state, the next completion runs on the new
// model, and names outside the catalog are refused.
func TestSwitchModel(t *testing.T) {
	t.Parallel()
	var cat model.Catalog
	if err := json.Unmarshal([]byte(`{"default": "a", "models": [
	  {"name": "a", "provider": "scripted", "model_id": "a", "context_window": 100000, "max_output_tokens": 100,
	   "scripted": {"script": {"default": [{"text": "from a"}, {"text": "a again"}]}}},
	  {"name": "b", "provider": "scripted", "model_id": "b", "context_window": 100000, "max_output_tokens": 100,
	   "scripted": {"script": {"default": [{"text": "b first"}, {"text": "from b"}]}}}]}`), &cat); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{Models: &cat})
	const thread = "thr_switch"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"hi"}`)
	if ev := events.nextOf(t, "turn"); ev.Data.Text != "from a" {
		t.Fatalf("first turn %q", ev.Data.Text)
	}
	url := srv.URL() + "/threads/" + thread + "/model"
	var e apiError
	for _, body := range []string{`{"model": "zz"}`, `{}`} {
		if code := do(t, http.MethodPost, url, body, &e); code != http.StatusBadRequest || e.Field != "model" {
			t.Fatalf("POST %s: %d %+v", body, code, e)
		}
	}
	if code := do(t, http.MethodPost, url, `{"model": "b"}`, nil); code != http.StatusAccepted {
		t.Fatalf("switch: %d", code)
	}
	if ev := events.nextOf(t, "model_switched"); ev.Data.Text != "model switched to b" {
		t.Fatalf("switch event %+v", ev.Data)
	}
	postMessage(t, srv, thread, `{"text":"again"}`)
	if ev := events.nextOf(t, "turn"); ev.Data.Text != "from b" {
		t.Fatalf("turn after the switch %q", ev.Data.Text)
	}
	waitIdle(t, srv)
	if th := getThread(t, srv, thread); th.State.Model != "b" || kinds(th.Items) != "user assistant marker user assistant" {
		t.Fatalf("state model %q, history %s", th.State.Model, kinds(th.Items))
	}
}

// TestSwitchAgent: a person switches the agent a thread runs as; the
// switch is in history and state, and the next completion runs the new
// agent's instructions.
func TestSwitchAgent(t *testing.T) {
	t.Parallel()
	chat := &chatServer{}
	ts := httptest.NewServer(chat)
	t.Cleanup(ts.Close)
	srv := startServer(t, Config{
		Models: &model.Catalog{Default: "local", Models: []model.Config{{Name: "local", Provider: model.ProviderOpenAI,
			ModelID: "local", ContextWindow: 32000, MaxOutputTokens: 1000, OpenAI: &model.OpenAIConfig{BaseURL: ts.URL + "/v1"}}}},
		Agents: []AgentConfig{
			{Agent: runtime.Agent{Name: "reviewer", Instructions: "You review code.", Tools: []string{"threads"}}},
			{Agent: runtime.Agent{Name: "writer", Instructions: "You write release notes."}},
		},
		DefaultAgent: "reviewer",
	})
	const thread = "t-switch"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Review my change."}`)
	waitIdle(t, srv)
	var e apiError
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/agent", `{"agent":"ghost"}`, &e); code != http.StatusBadRequest || e.Field != "agent" {
		t.Fatalf("unknown agent: %d %+v", code, e)
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/agent", `{"agent":"writer"}`, nil); code != http.StatusAccepted {
		t.Fatalf("switch: %d", code)
	}
	if ev := events.nextOf(t, "agent_switched"); !strings.Contains(ev.Data.Text, "writer") {
		t.Fatalf("switch event %+v", ev.Data)
	}
	postMessage(t, srv, thread, `{"text":"Now the notes."}`)
	waitIdle(t, srv)
	if got := chat.systems(); strings.Join(got, "|") != "You review code.|You write release notes." {
		t.Fatalf("system messages: %q", got)
	}
	if th := getThread(t, srv, thread); th.State.Agent != "writer" {
		t.Fatalf("state agent %q", th.State.Agent)
	}
}
