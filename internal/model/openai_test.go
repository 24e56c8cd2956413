package model

// OpenAI-compatible provider tests. No live endpoint (OpenAI, vLLM, Ollama,
// LM Studio) is reachable here: the tests run the real openai-go client
// against a local httptest server that replays the hand-written SSE streams
// and error bodies in testdata/openai/ (see helpers_test.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// openaiReply is one recorded HTTP response.
type openaiReply struct {
	status int
	file   string // testdata/openai/file: .sse streams, .json error bodies
	abort  int    // > 0: send only this many bytes, then drop the connection
}

type openaiServer struct {
	t       *testing.T
	mu      sync.Mutex
	replies []openaiReply
	reqs    []*http.Request
	bodies  [][]byte
}

func (s *openaiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.reqs = append(s.reqs, r)
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if n >= len(s.replies) {
		http.Error(w, `{"error":{"message":"test server: no recording left"}}`, http.StatusTeapot)
		return
	}
	rep := s.replies[n]
	b, err := os.ReadFile(filepath.Join("testdata", "openai", rep.file))
	if err != nil {
		s.t.Error(err)
		return
	}
	if strings.HasSuffix(rep.file, ".json") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		w.Write(b)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(rep.status)
	if rep.abort > 0 {
		w.Write(b[:rep.abort])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	// Write event by event, flushing, as a streaming server does.
	for _, ev := range strings.SplitAfter(string(b), "\n\n") {
		io.WriteString(w, ev)
		w.(http.Flusher).Flush()
	}
}

func (s *openaiServer) requests() ([]*http.Request, [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...), append([][]byte(nil), s.bodies...)
}

const testOpenAIModel = "gpt-test"

func newTestOpenAI(t *testing.T, cfgMod func(*Config), replies ...openaiReply) (runtime.Model, *openaiServer) {
	t.Helper()
	srv := &openaiServer{t: t, replies: replies}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	cfg := Config{Name: "gpt", Provider: ProviderOpenAI, ModelID: testOpenAIModel, ContextWindow: 128000,
		MaxOutputTokens: 4096, Images: true, OpenAI: &OpenAIConfig{BaseURL: ts.URL + "/v1", APIKey: "sk-test"}}
	if cfgMod != nil {
		cfgMod(&cfg)
	}
	m, err := FromConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

func TestOpenAIStreams(t *testing.T) {
	t.Parallel()
	ok := func(f string) openaiReply { return openaiReply{status: 200, file: f} }
	tests := []struct {
		name      string
		replies   []openaiReply
		outcomes  []string
		mention   []string
		text      string
		reasoning string
		tools     []wcall
		usage     *runtime.Usage
	}{
		{name: "text only", replies: []openaiReply{ok("text_only.sse")}, outcomes: []string{""},
			text: "Hello! How can I help?", usage: &runtime.Usage{Input: 25, Output: 9, Cached: 10, Total: 34}},
		{name: "one tool call", replies: []openaiReply{ok("tool_call.sse")}, outcomes: []string{""},
			text:  "Let me draw it.",
			tools: []wcall{{Kind: "tool", ID: "call_Ab12", Name: "chart", Args: `{"city": "Paris"}`}},
			usage: &runtime.Usage{Input: 120, Output: 40, Total: 160}},
		{name: "several tool calls in one message", replies: []openaiReply{ok("tool_calls_several.sse")}, outcomes: []string{""},
			tools: []wcall{{Kind: "tool", ID: "call_A", Name: "chart", Args: `{"city":"Paris"}`},
				{Kind: "tool", ID: "call_B", Name: "chart", Args: `{"city":"Lyon"}`}}},
		{name: "whole calls sharing index 0", replies: []openaiReply{ok("tool_calls_same_index.sse")}, outcomes: []string{""},
			tools: []wcall{{Kind: "tool", ID: "call_one", Name: "chart", Args: `{"city":"Paris"}`},
				{Kind: "tool", ID: "call_two", Name: "chart", Args: `{"city":"Lyon"}`}},
			usage: &runtime.Usage{Input: 40, Output: 30, Total: 70}},
		{name: "reasoning_content deltas", replies: []openaiReply{ok("reasoning.sse")}, outcomes: []string{""},
			reasoning: "The user greets me. Answer briefly.", text: "Hi there."},
		{name: "reasoning deltas", replies: []openaiReply{ok("reasoning_field.sse")}, outcomes: []string{""},
			reasoning: "Short answer.", text: "Hi.", usage: &runtime.Usage{Input: 12, Output: 7, Total: 19}},
		{name: "throttling then success",
			replies:  []openaiReply{{status: 429, file: "rate_limited.json"}, ok("text_only.sse")},
			outcomes: []string{"retry", ""}, mention: []string{testOpenAIModel, "429", "Rate limit reached"}, text: "Hello! How can I help?"},
		{name: "5xx is retryable", replies: []openaiReply{{status: 503, file: "server_error.json"}},
			outcomes: []string{"retry"}, mention: []string{testOpenAIModel, "503"}},
		{name: "error event mid-stream is retryable", replies: []openaiReply{ok("error_event.sse")},
			outcomes: []string{"retry"}, mention: []string{testOpenAIModel, "server had an error"}},
		{name: "stream cut without finish_reason", replies: []openaiReply{ok("cut.sse")},
			outcomes: []string{"retry"}, mention: []string{testOpenAIModel, "finish_reason"}},
		{name: "connection dropped mid-event", replies: []openaiReply{{status: 200, file: "text_only.sse", abort: 700}},
			outcomes: []string{"retry"}, mention: []string{testOpenAIModel}},
		{name: "access denied", replies: []openaiReply{{status: 403, file: "access_denied.json"}},
			outcomes: []string{"permanent"}, mention: []string{testOpenAIModel, "access denied", "not allowed to use model"}},
		{name: "bad request", replies: []openaiReply{{status: 400, file: "bad_request.json"}},
			outcomes: []string{"permanent"}, mention: []string{testOpenAIModel, "invalid", "string too long"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, srv := newTestOpenAI(t, nil, tt.replies...)
			var w *recorder
			for i, want := range tt.outcomes {
				w = &recorder{}
				err := m.Complete(context.Background(), simpleRequest(), w)
				checkOutcome(t, i+1, err, want, tt.mention...)
			}
			reqs, _ := srv.requests()
			if len(reqs) != len(tt.outcomes) {
				t.Errorf("server got %d requests for %d completions (SDK retries must be off)", len(reqs), len(tt.outcomes))
			}
			for _, r := range reqs {
				if r.URL.Path != "/v1/chat/completions" {
					t.Errorf("request path %q", r.URL.Path)
				}
				if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
					t.Errorf("Authorization = %q", got)
				}
			}
			if tt.outcomes[len(tt.outcomes)-1] != "" {
				return
			}
			if got := w.joined("text"); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if got := w.joined("reasoning"); got != tt.reasoning {
				t.Errorf("reasoning = %q, want %q", got, tt.reasoning)
			}
			if got := w.tools(); fmt.Sprint(got) != fmt.Sprint(tt.tools) {
				t.Errorf("tool calls = %+v, want %+v", got, tt.tools)
			}
			if tt.usage != nil {
				if u, ok := w.usage(); !ok || u != *tt.usage {
					t.Errorf("usage = %+v (reported %v), want %+v", u, ok, *tt.usage)
				}
			}
		})
	}
}

func TestOpenAIStreamsInOrder(t *testing.T) {
	t.Parallel()
	m, _ := newTestOpenAI(t, nil, openaiReply{status: 200, file: "tool_calls_several.sse"})
	w := &recorder{}
	if err := m.Complete(context.Background(), simpleRequest(), w); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range w.all() {
		kinds = append(kinds, c.Kind)
	}
	if got, want := strings.Join(kinds, ","), "tool,tool,usage"; got != want {
		t.Errorf("writer calls %s, want %s", got, want)
	}
}

func TestOpenAIRequestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		mod    func(*Config)
	}{
		{"openai/request_rich.golden.json", nil},
		{"openai/request_rich_noimages_maxtokens.golden.json", func(c *Config) {
			c.Images = false
			c.OpenAI.MaxTokensField = "max_tokens"
		}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			m, srv := newTestOpenAI(t, tc.mod, openaiReply{status: 200, file: "text_only.sse"})
			req := &runtime.CompletionRequest{ThreadID: "th_1", History: richHistory(),
				Tools: []runtime.ToolSpec{weatherTool}}
			if err := m.Complete(context.Background(), req, &recorder{}); err != nil {
				t.Fatal(err)
			}
			_, bodies := srv.requests()
			checkGolden(t, tc.golden, bodies[0])
		})
	}
}

// TestOpenAIKeyFromEnvironment checks api_key_env, and that without a key no
// Authorization header is sent even when OPENAI_API_KEY is set (the key of
// one provider must not leak to another endpoint).
func TestOpenAIKeyFromEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{"MY_GATEWAY_KEY": "sk-gateway", "OPENAI_API_KEY": "sk-openai"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		name, keyEnv, want string
	}{
		{"from api_key_env", "MY_GATEWAY_KEY", "Bearer sk-gateway"},
		{"no key configured", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := &openaiServer{t: t, replies: []openaiReply{{status: 200, file: "text_only.sse"}}}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			cfg := Config{Provider: ProviderOpenAI, ModelID: "llama3", ContextWindow: 8192, MaxOutputTokens: 1024,
				OpenAI: &OpenAIConfig{BaseURL: ts.URL + "/v1", APIKeyEnv: tc.keyEnv}}
			m, err := FromConfig(context.Background(), cfg, WithGetenv(getenv))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Complete(context.Background(), simpleRequest(), &recorder{}); err != nil {
				t.Fatal(err)
			}
			reqs, _ := srv.requests()
			if got := reqs[0].Header.Get("Authorization"); got != tc.want {
				t.Errorf("Authorization = %q, want %q", got, tc.want)
			}
		})
	}
	_, err := FromConfig(context.Background(), Config{Name: "gw", Provider: ProviderOpenAI, ModelID: "m", ContextWindow: 10,
		MaxOutputTokens: 5, OpenAI: &OpenAIConfig{APIKeyEnv: "UNSET_KEY"}}, WithGetenv(getenv))
	if err == nil || !strings.Contains(err.Error(), "UNSET_KEY") {
		t.Errorf("an unset api_key_env variable must fail naming it, got %v", err)
	}
}

func TestOpenAIRequestOptions(t *testing.T) {
	t.Parallel()
	m, srv := newTestOpenAI(t, nil, openaiReply{status: 200, file: "text_only.sse"})
	req := simpleRequest()
	req.Tools = nil
	if err := m.Complete(context.Background(), req, &recorder{}); err != nil {
		t.Fatal(err)
	}
	_, bodies := srv.requests()
	var body map[string]any
	if err := json.Unmarshal(bodies[0], &body); err != nil {
		t.Fatal(err)
	}
	if body["stream"] != true {
		t.Errorf("stream = %v, want true", body["stream"])
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v, want include_usage", body["stream_options"])
	}
	if _, ok := body["tools"]; ok {
		t.Errorf("tools sent although none are offered: %s", bodies[0])
	}
}
