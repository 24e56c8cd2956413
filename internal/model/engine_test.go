package model

// These tests run the real slice engine (internal/runtime with the
// in-memory stores of internal/local) on top of each provider and its
// replay server, to check the contract between them end to end: the engine
// retries a throttled completion, keeps the first of several streamed tool
// calls, and ends the slice with an error reply on a permanent failure.

import (
	"context"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

type memQueue struct {
	mu   sync.Mutex
	msgs []runtime.Message
}

func (q *memQueue) Send(_ context.Context, msgs ...runtime.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, msgs...)
	return nil
}

// chartTool is an asynchronous tool that records its dispatches.
type chartTool struct {
	mu    sync.Mutex
	calls []runtime.Invocation
}

func (c *chartTool) Dispatch(_ context.Context, inv runtime.Invocation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, inv)
	return nil
}

func TestEngineDrivesProviders(t *testing.T) {
	t.Parallel()
	bedrock := func(t *testing.T, recs ...string) runtime.Model {
		m, _ := newTestBedrock(t, nil, recs...)
		return m
	}
	oai := func(t *testing.T, recs ...string) runtime.Model {
		var replies []openaiReply
		for _, r := range recs {
			switch r {
			case "throttle":
				replies = append(replies, openaiReply{status: 429, file: "rate_limited.json"})
			case "denied":
				replies = append(replies, openaiReply{status: 403, file: "access_denied.json"})
			default:
				replies = append(replies, openaiReply{status: 200, file: r})
			}
		}
		m, _ := newTestOpenAI(t, nil, replies...)
		return m
	}
	tests := []struct {
		name      string
		model     func(t *testing.T) runtime.Model
		permanent bool
		wantText  string
		wantArgs  string // of the one dispatched call; "" for none
	}{
		{name: "bedrock: throttled, then several calls", model: func(t *testing.T) runtime.Model {
			return bedrock(t, "throttling_http.json", "tool_calls_several.json")
		}, wantText: "Drawing both.", wantArgs: `{"city":"Paris"}`},
		{name: "bedrock: access denied", model: func(t *testing.T) runtime.Model {
			return bedrock(t, "access_denied.json")
		}, permanent: true},
		{name: "openai: throttled, then several calls", model: func(t *testing.T) runtime.Model {
			return oai(t, "throttle", "tool_calls_several.sse")
		}, wantArgs: `{"city":"Paris"}`},
		{name: "openai: cut, then text", model: func(t *testing.T) runtime.Model {
			return oai(t, "cut.sse", "text_only.sse")
		}, wantText: "Hello! How can I help?"},
		{name: "openai: access denied", model: func(t *testing.T) runtime.Model {
			return oai(t, "denied")
		}, permanent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tool := &chartTool{}
			tb := runtime.NewToolbox()
			if err := tb.Add(runtime.ToolEntry{Spec: weatherTool, Async: tool}); err != nil {
				t.Fatal(err)
			}
			hist := local.NewHistoryStore()
			e := &runtime.Engine{History: hist, Queue: &memQueue{}, Model: tt.model(t), Tools: tb,
				Limits: runtime.Limits{RetryBase: 1}}
			res, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "th_1", FirstDelivery: true,
				Messages: []runtime.Message{{V: 1, ID: "m1", ThreadID: "th_1", Kind: runtime.KindUser, Text: "Chart Paris and Lyon"}}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.permanent {
				if res.ModelErr == nil || !runtime.IsPermanent(res.ModelErr) {
					t.Fatalf("want a permanent model error, got %v", res.ModelErr)
				}
				return
			}
			if res.ModelErr != nil {
				t.Fatalf("model error: %v", res.ModelErr)
			}
			th, err := hist.Load(context.Background(), "th_1")
			if err != nil {
				t.Fatal(err)
			}
			var text string
			var calls []runtime.Item
			for _, it := range th.Items {
				switch it.Kind {
				case runtime.ItemAssistant:
					text += it.Text
				case runtime.ItemToolCall:
					calls = append(calls, it)
				}
			}
			if text != tt.wantText {
				t.Errorf("assistant text %q, want %q", text, tt.wantText)
			}
			if tt.wantArgs == "" {
				if len(calls) != 0 {
					t.Errorf("unexpected tool calls %+v", calls)
				}
				return
			}
			if len(calls) != 1 || calls[0].Args != tt.wantArgs || calls[0].Name != "chart" {
				t.Fatalf("history calls %+v, want exactly the first streamed call", calls)
			}
			if res.Dispatched != calls[0].CallID {
				t.Errorf("dispatched %q, want %q", res.Dispatched, calls[0].CallID)
			}
			tool.mu.Lock()
			defer tool.mu.Unlock()
			if len(tool.calls) != 1 || tool.calls[0].Args != tt.wantArgs {
				t.Errorf("tool got %+v, want one dispatch with %s", tool.calls, tt.wantArgs)
			}
		})
	}
}
