package serverless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

type discardQueue struct{}

func (discardQueue) Send(context.Context, ...runtime.Message) error { return nil }

// A queue message naming an agent the deployment does not define goes to
// the dead-letter queue with the reason, and is not retried; a message
// naming a defined agent in the same batch is processed. The real engine
// runs here (with in-memory stores) so the reason is the engine's own.
func TestUnknownAgentGoesToDeadLetters(t *testing.T) {
	t.Parallel()
	agents, err := runtime.NewAgentSet([]runtime.Agent{{Name: "reviewer", Instructions: "Review."}}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &runtime.Engine{History: local.NewHistoryStore(), Queue: discardQueue{}, Model: &model.Sim{Chunks: 1, Usage: runtime.Usage{Input: 7, Output: 3, Cached: 2, Total: 10}},
		Tools: runtime.NewToolbox(), Agents: agents}
	dlq := &fakeDLQ{}
	var out bytes.Buffer
	h := newHandler(nil, dlq, &out)
	h.Slices = e
	body := func(id, thread, agent string) string {
		return `{"v":1,"id":"` + id + `","thread_id":"` + thread + `","kind":"user","text":"hi","agent":"` + agent + `"}`
	}
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		rec("sqs-1", "t1", body("m1", "t1", "ghost"), 1),
		rec("sqs-2", "t2", body("m2", "t2", "reviewer"), 1),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if f := failures(resp); len(f) != 0 {
		t.Errorf("batch item failures %v, want none (the bad message is dead-lettered, not retried)", f)
	}
	dl, ok := dlq.got["sqs-1"]
	if !ok || !strings.Contains(dl.Reason, `unknown agent "ghost"`) || !strings.Contains(dl.Reason, "agent") {
		t.Fatalf("dead letters %+v, want sqs-1 with the unknown agent as reason", dlq.got)
	}
	if _, bad := dlq.got["sqs-2"]; bad {
		t.Errorf("the message naming a defined agent was dead-lettered: %+v", dlq.got["sqs-2"])
	}
	th, err := e.History.Load(context.Background(), "t2")
	if err != nil || th.State.Agent != "reviewer" {
		t.Errorf("t2 bound to %q (%v), want reviewer", th.State.Agent, err)
	}
	// One EMF record per slice with the agent as dimension and its tokens.
	var found bool
	for _, line := range strings.Split(out.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["Agent"] != "reviewer" {
			continue
		}
		found = true
		if rec["AgentInputTokens"] != 7.0 || rec["AgentOutputTokens"] != 3.0 || rec["AgentCacheReadTokens"] != 2.0 || rec["AgentCompletions"] != 1.0 {
			t.Errorf("agent metrics record %v", rec)
		}
	}
	if !found {
		t.Errorf("no EMF record with the Agent dimension in:\n%s", out.String())
	}
}
