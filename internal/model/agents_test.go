package model

// Agent-related request shapes: the system prompt (Bedrock system blocks,
// OpenAI system/developer message), Bedrock prompt-cache points, and Claude
// reasoning blocks kept with the turn and sent back unchanged. Bedrock is not
// reachable here: the requests are recorded by the local test server and
// compared with golden files.

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// engineWithWeatherTool is an engine whose model is m and whose one tool,
// get_weather, answers inline.
func engineWithWeatherTool(m runtime.Model) (*runtime.Engine, string) {
	tb := runtime.NewToolbox()
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "get_weather"}, Sync: weatherFunc{}})
	return &runtime.Engine{History: local.NewHistoryStore(), Queue: &memQueue{}, Model: m, Tools: tb,
		Limits: runtime.Limits{RetryBase: time.Millisecond}}, "th_agent"
}

type weatherFunc struct{}

func (weatherFunc) Run(context.Context, *runtime.SyncEnv, runtime.Invocation) (runtime.ToolOutput, error) {
	return runtime.ToolOutput{Text: "18°C, cloudy"}, nil
}

// blockRecorder is a recorder that also keeps reasoning blocks, as the
// engine's turn buffer does.
type blockRecorder struct {
	recorder
	blocks []runtime.ReasoningBlock
}

func (r *blockRecorder) ReasoningBlock(b runtime.ReasoningBlock) { r.blocks = append(r.blocks, b) }

// agentHistory is a user message, then a turn with signed and redacted
// reasoning that ended in a tool call, then its result.
func agentHistory() []runtime.Item {
	return []runtime.Item{
		{Kind: runtime.ItemUser, Text: "Weather in Paris?"},
		{Kind: runtime.ItemMarker, Name: runtime.AgentMarkerName, Text: "agent weather: definition version 2 now applies"},
		{Kind: runtime.ItemAssistant, Reasoning: "I need the weather. Call the tool.", Trace: &runtime.ReasoningTrace{Blocks: []runtime.ReasoningBlock{
			{Text: "I need the weather. Call the tool.", Signature: "EqoBCkgIARABGAIiQL1sig"},
			{Redacted: "cmVkYWN0ZWQtYnl0ZXM="},
		}}},
		{Kind: runtime.ItemToolCall, CallID: "tooluse_1", Name: "get_weather", Args: `{"city":"Paris"}`},
		{Kind: runtime.ItemToolResult, CallID: "tooluse_1", Name: "get_weather", Text: "18°C, cloudy"},
	}
}

func agentRequest() *runtime.CompletionRequest {
	return &runtime.CompletionRequest{ThreadID: "th_1", History: agentHistory(),
		Tools: []runtime.ToolSpec{weatherTool}, System: "You are a weather agent. Answer in one sentence.", Agent: "weather"}
}

func TestBedrockAgentRequestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		cache  bool
	}{
		{"bedrock/request_agent.golden.json", false},
		{"bedrock/request_agent_cache.golden.json", true},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			m, srv := newTestBedrock(t, func(c *Config) { c.Bedrock.PromptCache = tc.cache }, "text_only.json")
			if err := m.Complete(context.Background(), agentRequest(), &recorder{}); err != nil {
				t.Fatal(err)
			}
			_, bodies := srv.requests()
			checkGolden(t, tc.golden, bodies[0])
			var body struct {
				System     []map[string]any `json:"system"`
				ToolConfig struct {
					Tools []map[string]any `json:"tools"`
				} `json:"toolConfig"`
				Messages []struct {
					Role    string           `json:"role"`
					Content []map[string]any `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(bodies[0], &body); err != nil {
				t.Fatal(err)
			}
			if len(body.System) == 0 || body.System[0]["text"] != agentRequest().System {
				t.Errorf("system blocks %v, want the instructions first", body.System)
			}
			_, sysCache := body.System[len(body.System)-1]["cachePoint"]
			_, toolCache := body.ToolConfig.Tools[len(body.ToolConfig.Tools)-1]["cachePoint"]
			if sysCache != tc.cache || toolCache != tc.cache {
				t.Errorf("cache points after system %v and tools %v, want %v", sysCache, toolCache, tc.cache)
			}
			asst := body.Messages[1]
			if asst.Role != "assistant" || len(asst.Content) < 3 {
				t.Fatalf("second message %+v, want the assistant turn with reasoning", asst)
			}
			rc0, _ := asst.Content[0]["reasoningContent"].(map[string]any)
			rt, _ := rc0["reasoningText"].(map[string]any)
			rc1, _ := asst.Content[1]["reasoningContent"].(map[string]any)
			if rt["signature"] != "EqoBCkgIARABGAIiQL1sig" || rc1["redactedContent"] != "cmVkYWN0ZWQtYnl0ZXM=" {
				t.Errorf("reasoning blocks sent back %v / %v, want the signed and the redacted block unchanged", asst.Content[0], asst.Content[1])
			}
		})
	}
}

func TestBedrockKeepsReasoningBlocksAndCacheUsage(t *testing.T) {
	t.Parallel()
	m, _ := newTestBedrock(t, nil, "reasoning_signed_redacted_tool.json")
	rec := &blockRecorder{}
	if err := m.Complete(context.Background(), simpleRequest(), rec); err != nil {
		t.Fatal(err)
	}
	want := []runtime.ReasoningBlock{
		{Text: "I need the weather. Call the tool.", Signature: "EqoBCkgIARABGAIiQL1sig"},
		{Redacted: "cmVkYWN0ZWQtYnl0ZXM="},
	}
	if !reflect.DeepEqual(rec.blocks, want) {
		t.Errorf("reasoning blocks %+v, want %+v", rec.blocks, want)
	}
	var usage runtime.Usage
	for _, c := range rec.all() {
		if c.Kind == "usage" {
			usage = c.Usage
		}
	}
	if usage.Cached != 1500 || usage.CacheWrite != 500 {
		t.Errorf("usage %+v, want cache reads 1500 and writes 500", usage)
	}
}

// Through the engine: the blocks land in history with the turn, and the
// next request sends them back.
func TestBedrockReasoningRoundTripThroughEngine(t *testing.T) {
	t.Parallel()
	m, srv := newTestBedrock(t, nil, "reasoning_signed_redacted_tool.json", "text_only.json")
	e, th := engineWithWeatherTool(m)
	if _, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: th, Messages: []runtime.Message{
		{V: 1, ID: "u1", ThreadID: th, Kind: runtime.KindUser, Text: "Weather in Paris?"}}}); err != nil {
		t.Fatal(err)
	}
	_, bodies := srv.requests()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2 (the tool answers inline)", len(bodies))
	}
	var body struct {
		Messages []struct {
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(bodies[1], &body); err != nil {
		t.Fatal(err)
	}
	c := body.Messages[1].Content
	rc0, _ := c[0]["reasoningContent"].(map[string]any)
	rt, _ := rc0["reasoningText"].(map[string]any)
	rc1, _ := c[1]["reasoningContent"].(map[string]any)
	if rt["signature"] != "EqoBCkgIARABGAIiQL1sig" || rt["text"] != "I need the weather. Call the tool." || rc1["redactedContent"] != "cmVkYWN0ZWQtYnl0ZXM=" {
		t.Errorf("second request's assistant turn %v, want the signed and redacted blocks first, unchanged", c)
	}
}

func TestOpenAIAgentRequestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden, role string
	}{
		{"openai/request_agent.golden.json", "system"},
		{"openai/request_agent_developer.golden.json", "developer"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			m, srv := newTestOpenAI(t, func(c *Config) {
				if tc.role == "developer" {
					c.OpenAI.SystemRole = "developer"
				}
			}, openaiReply{status: 200, file: "text_only.sse"})
			if err := m.Complete(context.Background(), agentRequest(), &recorder{}); err != nil {
				t.Fatal(err)
			}
			_, bodies := srv.requests()
			checkGolden(t, tc.golden, bodies[0])
			var body struct {
				Messages []struct {
					Role    string `json:"role"`
					Content any    `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(bodies[0], &body); err != nil {
				t.Fatal(err)
			}
			if body.Messages[0].Role != tc.role || body.Messages[0].Content != agentRequest().System {
				t.Errorf("first message %+v, want the instructions as %s", body.Messages[0], tc.role)
			}
		})
	}
}

func TestOpenAISystemRoleValidated(t *testing.T) {
	t.Parallel()
	c := Config{Provider: ProviderOpenAI, ModelID: "m", ContextWindow: 10, MaxOutputTokens: 5, OpenAI: &OpenAIConfig{SystemRole: "admin"}}
	var ce *ConfigError
	if err := c.Validate(); !errors.As(err, &ce) || ce.Field != "openai.system_role" {
		t.Errorf("Validate = %v, want a ConfigError for openai.system_role", err)
	}
}
