package serverless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

// TestTimeMetricsPerAgentAndTool: a slice that consumes a tool's result
// writes the tool's latency as an EMF metric with the Tool dimension, and
// the agent's record carries its queue delay, measured from the SQS
// record's SentTimestamp (the result's body was not stamped), and its
// wait on the tool. The real engine runs, on the test's clock.
func TestTimeMetricsPerAgentAndTool(t *testing.T) {
	t.Parallel()
	agents, err := runtime.NewAgentSet([]runtime.Agent{{Name: "reviewer", Instructions: "Review."}}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	script, err := model.ParseScript([]byte(`{"default": [{"text": "Asking.", "tool_call": {"name": "ask", "args": {}}}, {"text": "Done."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tb := runtime.NewToolbox()
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "ask"}, Async: &runtimetest.RecordingTool{}})
	clock := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	e := &runtime.Engine{History: local.NewHistoryStore(), Queue: discardQueue{}, Model: model.NewScripted(script),
		Tools: tb, Agents: agents, Now: func() time.Time { return clock }}
	var out bytes.Buffer
	h := newHandler(nil, &fakeDLQ{}, &out)
	h.Slices = e
	ctx := context.Background()
	if _, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{
		rec("sqs-1", "t1", `{"v":1,"id":"m1","thread_id":"t1","kind":"user","text":"hi","agent":"reviewer"}`, 1)}}); err != nil {
		t.Fatal(err)
	}
	th, err := e.History.Load(ctx, "t1")
	if err != nil || th.State.Pending == nil {
		t.Fatalf("thread %+v (%v), want a pending call", th, err)
	}
	result := rec("sqs-2", "t1", fmt.Sprintf(`{"v":1,"id":"r1","thread_id":"t1","kind":"tool_result","tool_call_id":%q,"text":"yes"}`, th.State.Pending.ID), 1)
	result.Attributes["SentTimestamp"] = fmt.Sprint(clock.Add(5 * time.Second).UnixMilli())
	clock = clock.Add(7 * time.Second)
	out.Reset()
	if _, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{result}}); err != nil {
		t.Fatal(err)
	}
	var tool, agent map[string]any
	for _, line := range strings.Split(out.String(), "\n") {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) != nil || r["_aws"] == nil {
			continue
		}
		switch {
		case r["Tool"] == "ask":
			tool = r
		case r["Agent"] == "reviewer":
			agent = r
		}
	}
	if tool == nil || tool["ToolLatency"] != 5000.0 {
		t.Fatalf("tool record %v, want ToolLatency 5000 ms, in:\n%s", tool, out.String())
	}
	if agent == nil || agent["AgentQueueDelay"] != 2000.0 || agent["AgentToolWait"] != 5000.0 || agent["AgentCompletions"] != 1.0 {
		t.Fatalf("agent record %v, want a queue delay of 2000 ms and a tool wait of 5000 ms", agent)
	}
}
