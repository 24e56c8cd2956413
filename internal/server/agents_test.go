package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// TestBadAgentConfig: every mistake in an agent definition is a
// *ConfigError naming the field, found before anything starts.
func TestBadAgentConfig(t *testing.T) {
	t.Parallel()
	models := `"models":{"default":"a","models":[{"name":"a","provider":"sim","model_id":"s","context_window":10,"max_output_tokens":5}]}`
	ok := `{"name":"rev","instructions":"Review."}`
	cases := []struct {
		name, doc, field, want string
	}{
		{"bad name", `{"agents":[{"name":"re v","instructions":"x"}]}`, "agents[0].name", "letters, digits"},
		{"empty instructions", `{"agents":[{"name":"rev","instructions":"  "}]}`, "agents[0].instructions", "empty"},
		{"both instructions", `{"agents":[{"name":"rev","instructions":"x","instructions_file":"f.md"}]}`, "agents[0].instructions_file", "one of them"},
		{"missing file", `{"agents":[{"name":"rev","instructions_file":"/nonexistent/x.md"}]}`, "agents[0].instructions_file", "no such file"},
		{"unknown default", `{"agents":[` + ok + `],"default_agent":"zz"}`, "default_agent", `"zz" is not a defined agent`},
		{"default without agents", `{"default_agent":"rev"}`, "default_agent", "no agents"},
		{"two without default", `{"agents":[` + ok + `,{"name":"b","instructions":"B."}]}`, "default_agent", "missing"},
		{"duplicate", `{"agents":[` + ok + `,` + ok + `],"default_agent":"rev"}`, "agents[1].name", "defined twice"},
		{"unknown spawnable", `{"agents":[{"name":"rev","instructions":"x","spawnable":["ghost"]}]}`, "agents[0].spawnable[0]", `"ghost" is not a defined agent`},
		{"tool server not configured", `{"agents":[{"name":"rev","instructions":"x","tools":["threads","github"]}]}`, "agents[0].tools[1]", `no toolset "github" is configured`},
		{"examples not configured", `{"agents":[{"name":"rev","instructions":"x","tools":["examples"]}]}`, "agents[0].tools[0]", `no toolset "examples"`},
		{"model without catalog", `{"agents":[{"name":"rev","instructions":"x","model":"a"}]}`, "agents[0].model", "no models catalog"},
		{"model not in catalog", `{` + models + `,"agents":[{"name":"rev","instructions":"x","model":"zz"}]}`, "agents[0].model", `"zz" is not a model of the catalog`},
		{"bad priority", `{"agents":[{"name":"rev","instructions":"x","priority":"now"}]}`, "agents[0].priority", "unknown class"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := DecodeConfig([]byte(c.doc))
			if err == nil {
				err = cfg.Validate()
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(ce.Reason, c.want) {
				t.Fatalf("error = %v, want field %q mentioning %q", err, c.field, c.want)
			}
		})
	}
	// A toolset only a tool server can announce is checked at Start.
	cfg, err := DecodeConfig([]byte(`{"tool_servers":["http://127.0.0.1:1"],"agents":[{"name":"rev","instructions":"x","tools":["github","threads","sleep"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.resolve()
	if err != nil || s.remoteToolsets["github"] != "agents[0].tools[0]" || len(s.remoteToolsets) != 1 {
		t.Fatalf("resolve = %v, remote toolsets %v", err, s)
	}
}

// A toolset no tool server announces, although every server answered,
// is a typo: Start refuses it naming the field, and nothing stays running
// (goleak checks in TestMain). A server that is down is another matter
// (TestDegradedStartWhenAToolServerIsDown).
func TestAgentToolsetCheckedAtStart(t *testing.T) {
	t.Parallel()
	tools := &flakyToolServer{}
	ts := httptest.NewServer(tools)
	t.Cleanup(ts.Close)
	tools.url = ts.URL
	cfg := Config{Listen: "127.0.0.1:0", ToolServers: []string{ts.URL}, Data: t.TempDir(),
		Agents: []AgentConfig{{Agent: runtime.Agent{Name: "rev", Instructions: "x", Tools: []string{"gitlab"}}}}}
	srv, err := New(t.Context(), cfg, Options{Logger: quietLogger(), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Start(t.Context())
	srv.Stop()
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "agents[0].tools[0]" || !strings.Contains(ce.Reason, `no tool server announced a toolset named "gitlab"`) {
		t.Fatalf("Start = %v", err)
	}
}

func TestLoadConfigInstructionsFile(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(filepath.Join("testdata", "config", "agents.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.agents) != 2 || !strings.HasPrefix(s.agents[0].Instructions, "You are the reviewer.") || s.defaultAgent != "reviewer" {
		t.Fatalf("agents %+v default %q", s.agents, s.defaultAgent)
	}
}

// chatServer is a local OpenAI-compatible endpoint speaking the streaming
// chat-completions wire format; it records every request body.
type chatServer struct {
	mu     sync.Mutex
	bodies []chatRequest
}

type chatRequest struct {
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
}

func (c *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req chatRequest
	if err := json.Unmarshal(b, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad JSON"}}`, http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.bodies = append(c.bodies, req)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(s string) {
		fmt.Fprintf(w, "data: %s\n\n", s)
		w.(http.Flusher).Flush()
	}
	const head = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"local"`
	chunk(head + `,"choices":[{"index":0,"delta":{"role":"assistant","content":"Done."},"finish_reason":null}]}`)
	chunk(head + `,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
	chunk(head + `,"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":2,"total_tokens":42,"prompt_tokens_details":{"cached_tokens":32}}}`)
	chunk("[DONE]")
}

func (c *chatServer) systems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, b := range c.bodies {
		if len(b.Messages) > 0 && b.Messages[0].Role == "system" {
			out = append(out, fmt.Sprint(b.Messages[0].Content))
		} else {
			out = append(out, "(none)")
		}
	}
	return out
}

// TestServeAgentsSystemMessage: the instructions of the agent a thread is
// bound to arrive as the system message at an OpenAI-compatible endpoint,
// the binding and usage show in GET /threads/{id}, and messages naming an
// unknown or another agent are refused.
func TestServeAgentsSystemMessage(t *testing.T) {
	t.Parallel()
	chat := &chatServer{}
	ts := httptest.NewServer(chat)
	t.Cleanup(ts.Close)
	cfg := Config{
		Models: &model.Catalog{Default: "local", Models: []model.Config{{Name: "local", Provider: model.ProviderOpenAI,
			ModelID: "local", ContextWindow: 32000, MaxOutputTokens: 1000, OpenAI: &model.OpenAIConfig{BaseURL: ts.URL + "/v1"}}}},
		Agents: []AgentConfig{
			{Agent: runtime.Agent{Name: "reviewer", Instructions: "You review code.", Tools: []string{"threads"}}},
			{Agent: runtime.Agent{Name: "writer", Instructions: "You write release notes.", Model: "local"}},
		},
		DefaultAgent: "reviewer",
	}
	srv := startServer(t, cfg)
	postMessage(t, srv, "t-writer", `{"text":"Notes for v2, please.","agent":"writer"}`)
	waitIdle(t, srv)
	postMessage(t, srv, "t-default", `{"text":"Review my change."}`)
	waitIdle(t, srv)
	if got := chat.systems(); strings.Join(got, "|") != "You write release notes.|You review code." {
		t.Fatalf("system messages received: %q", got)
	}
	th := getThread(t, srv, "t-writer")
	want := runtime.Agent{Name: "writer", Instructions: "You write release notes.", Model: "local"}
	if th.State.Agent != "writer" || th.State.AgentHash != want.Hash() {
		t.Errorf("thread state agent %q@%s, want writer@%s", th.State.Agent, th.State.AgentHash, want.Hash())
	}
	if u := th.State.Usage; u.Input != 40 || u.Output != 2 || u.Cached != 32 {
		t.Errorf("thread usage %+v", u)
	}
	for _, c := range []struct {
		thread, body string
		status       int
		field        string
	}{
		{"t-new", `{"text":"x","agent":"ghost"}`, http.StatusBadRequest, "agent"},
		{"t-new", `{"text":"x","agent":"bad name"}`, http.StatusBadRequest, "agent"},
		{"t-writer", `{"text":"x","agent":"reviewer"}`, http.StatusConflict, "agent"},
		{"t-default", `{"text":"x","agent":"writer"}`, http.StatusConflict, "agent"},
	} {
		var e apiError
		if code := do(t, http.MethodPost, srv.URL()+"/threads/"+c.thread+"/messages", c.body, &e); code != c.status || e.Field != c.field {
			t.Errorf("POST %s %s: %d %+v, want %d naming %q", c.thread, c.body, code, e, c.status, c.field)
		}
	}
	// Naming the agent the thread runs as is accepted.
	postMessage(t, srv, "t-writer", `{"text":"Shorter, please.","agent":"writer"}`)
	waitIdle(t, srv)
	if got := chat.systems(); len(got) != 3 || got[2] != "You write release notes." {
		t.Errorf("system messages received: %q", got)
	}
}
