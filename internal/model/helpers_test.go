package model

// Test helpers shared by the provider tests.
//
// No live model endpoint (Bedrock, OpenAI, vLLM, ...) is reachable from the
// machines these tests run on. The providers are tested against local
// httptest servers that replay recordings from testdata/. The recordings are
// hand-written from the documented wire formats, not captured from a live
// service:
//   - Bedrock ConverseStream: the AWS event-stream binary framing
//     (application/vnd.amazon.eventstream; prelude, headers :message-type,
//     :event-type / :exception-type, :content-type, JSON payload, CRCs),
//     built at test time with the SDK's aws/protocol/eventstream encoder from
//     the JSON descriptions in testdata/bedrock/*.json; the event and error
//     shapes follow the Bedrock API reference for ConverseStream
//     (messageStart, contentBlockStart, contentBlockDelta, contentBlockStop,
//     messageStop, metadata; throttlingException, AccessDeniedException with
//     X-Amzn-ErrorType).
//   - OpenAI chat completions: server-sent events (data: {chunk} lines,
//     data: [DONE]) as in OpenAI's streaming reference, in
//     testdata/openai/*.sse, and JSON error bodies in testdata/openai/*.json.

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden request files in testdata/")

// recorder is a runtime.TurnWriter that records every call in order.
type recorder struct {
	mu    sync.Mutex
	calls []wcall
}

// wcall is one call on the writer: Kind is text, reasoning, tool or usage.
type wcall struct {
	Kind  string
	S     string // text or reasoning delta
	ID    string // tool calls
	Name  string
	Args  string
	Usage runtime.Usage
}

func (r *recorder) add(c wcall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

func (r *recorder) Text(s string)      { r.add(wcall{Kind: "text", S: s}) }
func (r *recorder) Reasoning(s string) { r.add(wcall{Kind: "reasoning", S: s}) }
func (r *recorder) ToolCall(id, name, args string) {
	r.add(wcall{Kind: "tool", ID: id, Name: name, Args: args})
}
func (r *recorder) Usage(u runtime.Usage) { r.add(wcall{Kind: "usage", Usage: u}) }

func (r *recorder) all() []wcall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]wcall(nil), r.calls...)
}

// joined returns the concatenated deltas of a kind ("text" or "reasoning").
func (r *recorder) joined(kind string) string {
	s := ""
	for _, c := range r.all() {
		if c.Kind == kind {
			s += c.S
		}
	}
	return s
}

func (r *recorder) tools() []wcall {
	var out []wcall
	for _, c := range r.all() {
		if c.Kind == "tool" {
			out = append(out, c)
		}
	}
	return out
}

func (r *recorder) usage() (runtime.Usage, bool) {
	var u runtime.Usage
	ok := false
	for _, c := range r.all() {
		if c.Kind == "usage" {
			u, ok = c.Usage, true
		}
	}
	return u, ok
}

// checkGolden compares got (JSON) with testdata/name after normalising both,
// or rewrites the file with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	var g any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, got)
	}
	if *update {
		b, _ := json.MarshalIndent(g, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	var w any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("golden file %s is not JSON: %v", path, err)
	}
	if !reflect.DeepEqual(g, w) {
		b, _ := json.MarshalIndent(g, "", "  ")
		t.Errorf("request body differs from %s (run with -update to accept):\n%s", path, b)
	}
}

// richHistory exercises every item kind and the mapping's corner cases: a
// summary, a marker, assistant text followed by a call, a result with an
// image, an injected event pair, and an orphan result.
func richHistory() []runtime.Item {
	const png = "iVBORw0KGgo=" // the PNG signature, base64
	return []runtime.Item{
		{Kind: runtime.ItemSummary, Text: "The user asked for the weather in Paris."},
		{Kind: runtime.ItemUser, Text: "And a chart, please."},
		{Kind: runtime.ItemAssistant, Text: "Fetching it.", Reasoning: "need the chart tool"},
		{Kind: runtime.ItemToolCall, CallID: "call_chart", Name: "chart", Args: `{"city":"Paris"}`},
		{Kind: runtime.ItemToolResult, CallID: "call_chart", Name: "chart", Text: "chart ready",
			Content: []runtime.Content{{Type: "image", Data: png, MediaType: "image/png"}}},
		{Kind: runtime.ItemMarker, Text: "continue"},
		{Kind: runtime.ItemToolCall, CallID: "evt_1", Name: runtime.InjectedToolName,
			Args: `{"original_tool_name":"watch","original_tool_call_id":"call_w","original_args":{}}`},
		{Kind: runtime.ItemToolResult, CallID: "evt_1", Name: runtime.InjectedToolName, Text: "it rains", IsError: false},
		{Kind: runtime.ItemToolResult, CallID: "call_gone", Name: "old_tool", Text: "late"},
		{Kind: runtime.ItemUser, Text: "Thanks. Anything else?"},
	}
}

var weatherTool = runtime.ToolSpec{Name: "chart", Description: "Draws a weather chart.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
