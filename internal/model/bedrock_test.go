package model

// Bedrock provider tests. No live Bedrock endpoint is reachable here: the
// tests run the real SDK client against a local httptest server that replays
// the hand-written recordings in testdata/bedrock/ (see helpers_test.go for
// where their shapes come from), framed with the SDK's event-stream encoder.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agentslice/agentslice/internal/runtime"
)

// bedrockRecording is one recorded HTTP response of ConverseStream.
type bedrockRecording struct {
	Comment string            `json:"comment"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	// Frames are event-stream messages: {"event": name} or
	// {"exception": name}, each with a JSON payload.
	Frames []struct {
		Event     string          `json:"event"`
		Exception string          `json:"exception"`
		Payload   json.RawMessage `json:"payload"`
	} `json:"frames"`
	// Body is the JSON body of an error response (no frames).
	Body json.RawMessage `json:"body"`
	// AbortAfter > 0 sends only that many bytes of the last frame, then
	// drops the connection.
	AbortAfter int `json:"abort_after_bytes_of_last_frame"`
}

// bedrockServer replays recordings, one per request, and keeps what it got.
type bedrockServer struct {
	t          *testing.T
	mu         sync.Mutex
	recordings []string
	paths      []string
	bodies     [][]byte
}

func (s *bedrockServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.paths = append(s.paths, r.URL.Path)
	s.bodies = append(s.bodies, body)
	s.mu.Unlock()
	if n >= len(s.recordings) {
		http.Error(w, `{"message":"test server: no recording left"}`, http.StatusTeapot)
		return
	}
	rec := loadBedrockRecording(s.t, s.recordings[n])
	for k, v := range rec.Headers {
		w.Header().Set(k, v)
	}
	if len(rec.Body) > 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Status)
		w.Write(rec.Body)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(rec.Status)
	enc := eventstream.NewEncoder()
	for i, f := range rec.Frames {
		var msg eventstream.Message
		if f.Exception != "" {
			msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
			msg.Headers.Set(":exception-type", eventstream.StringValue(f.Exception))
		} else {
			msg.Headers.Set(":message-type", eventstream.StringValue("event"))
			msg.Headers.Set(":event-type", eventstream.StringValue(f.Event))
		}
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Payload = f.Payload
		var buf bytes.Buffer
		if err := enc.Encode(&buf, msg); err != nil {
			s.t.Errorf("encoding frame %d of %s: %v", i, s.recordings[n], err)
			return
		}
		b := buf.Bytes()
		if i == len(rec.Frames)-1 && rec.AbortAfter > 0 {
			w.Write(b[:rec.AbortAfter])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // drop the connection mid-frame
		}
		w.Write(b)
		w.(http.Flusher).Flush()
	}
}

func (s *bedrockServer) requests() ([]string, [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...), append([][]byte(nil), s.bodies...)
}

func loadBedrockRecording(t *testing.T, name string) bedrockRecording {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "bedrock", name))
	if err != nil {
		t.Fatal(err)
	}
	var rec bedrockRecording
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		t.Fatalf("recording %s: %v", name, err)
	}
	return rec
}

const testBedrockModel = "anthropic.claude-test-v1:0"

// newTestBedrock starts a server replaying recordings and a model that talks
// to it with static credentials.
func newTestBedrock(t *testing.T, cfgMod func(*Config), recordings ...string) (runtime.Model, *bedrockServer) {
	t.Helper()
	srv := &bedrockServer{t: t, recordings: recordings}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	cfg := Config{Name: "claude", Provider: ProviderBedrock, ModelID: testBedrockModel, ContextWindow: 200000,
		MaxOutputTokens: 8192, Images: true, Bedrock: &BedrockConfig{Endpoint: ts.URL}}
	if cfgMod != nil {
		cfgMod(&cfg)
	}
	awsCfg := aws.Config{Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")}
	m, err := FromConfig(context.Background(), cfg, WithAWSConfig(awsCfg))
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

func simpleRequest() *runtime.CompletionRequest {
	return &runtime.CompletionRequest{ThreadID: "th_1",
		History: []runtime.Item{{Kind: runtime.ItemUser, Text: "Hello"}}, Tools: []runtime.ToolSpec{weatherTool}}
}

// outcome is what one Complete call must return: "" (success), "retry" (a
// plain error the engine retries) or "permanent".
func checkOutcome(t *testing.T, attempt int, err error, want string, mustMention ...string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("attempt %d: unexpected error: %v", attempt, err)
	case want == "retry" && (err == nil || runtime.IsPermanent(err)):
		t.Fatalf("attempt %d: want a retryable error, got %v", attempt, err)
	case want == "permanent" && !runtime.IsPermanent(err):
		t.Fatalf("attempt %d: want a permanent error, got %v", attempt, err)
	}
	for _, s := range mustMention {
		if err != nil && !strings.Contains(err.Error(), s) {
			t.Errorf("attempt %d: error %q does not mention %q", attempt, err, s)
		}
	}
}

func TestBedrockStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		recordings []string
		outcomes   []string // per attempt
		mention    []string // in every error
		text       string   // of the last attempt
		reasoning  string
		tools      []wcall
		usage      *runtime.Usage
	}{
		{name: "text only", recordings: []string{"text_only.json"}, outcomes: []string{""},
			text: "Hello! How can I help?", usage: &runtime.Usage{Input: 25, Output: 9, Cached: 10, Total: 44}},
		{name: "one tool call", recordings: []string{"tool_call.json"}, outcomes: []string{""},
			text:  "Let me draw it.",
			tools: []wcall{{Kind: "tool", ID: "tooluse_kX1", Name: "chart", Args: `{"city": "Paris"}`}},
			usage: &runtime.Usage{Input: 120, Output: 40, Total: 160}},
		{name: "several tool calls in one message", recordings: []string{"tool_calls_several.json"}, outcomes: []string{""},
			text: "Drawing both.",
			tools: []wcall{{Kind: "tool", ID: "tooluse_a", Name: "chart", Args: `{"city":"Paris"}`},
				{Kind: "tool", ID: "tooluse_b", Name: "chart", Args: `{"city":"Lyon"}`}}},
		{name: "tool call without input", recordings: []string{"tool_call_no_input.json"}, outcomes: []string{""},
			tools: []wcall{{Kind: "tool", ID: "tooluse_z", Name: "chart", Args: ""}}},
		{name: "reasoning blocks", recordings: []string{"reasoning.json"}, outcomes: []string{""},
			reasoning: "The user greets me. Answer briefly.", text: "Hi there."},
		{name: "throttling then success", recordings: []string{"throttling_http.json", "text_only.json"},
			outcomes: []string{"retry", ""}, mention: []string{testBedrockModel, "ThrottlingException"}, text: "Hello! How can I help?"},
		{name: "throttling mid-stream then success", recordings: []string{"throttling_stream.json", "text_only.json"},
			outcomes: []string{"retry", ""}, mention: []string{testBedrockModel, "ThrottlingException"}, text: "Hello! How can I help?"},
		{name: "5xx is retryable", recordings: []string{"service_unavailable.json"}, outcomes: []string{"retry"},
			mention: []string{"ServiceUnavailableException"}},
		{name: "stream cut at a frame boundary", recordings: []string{"cut_clean.json"}, outcomes: []string{"retry"},
			mention: []string{testBedrockModel, "messageStop"}},
		{name: "stream cut mid-frame", recordings: []string{"cut_mid_frame.json"}, outcomes: []string{"retry"},
			mention: []string{testBedrockModel}},
		{name: "access denied", recordings: []string{"access_denied.json"}, outcomes: []string{"permanent"},
			mention: []string{testBedrockModel, "access denied", "AccessDeniedException"}},
		{name: "bad request", recordings: []string{"validation.json"}, outcomes: []string{"permanent"},
			mention: []string{testBedrockModel, "invalid", "roles must alternate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, srv := newTestBedrock(t, nil, tt.recordings...)
			var w *recorder
			for i, want := range tt.outcomes {
				w = &recorder{}
				err := m.Complete(context.Background(), simpleRequest(), w)
				checkOutcome(t, i+1, err, want, tt.mention...)
			}
			paths, _ := srv.requests()
			// Zero SDK retries: one HTTP request per Complete call.
			if len(paths) != len(tt.outcomes) {
				t.Errorf("server got %d requests for %d completions (SDK retries must be off)", len(paths), len(tt.outcomes))
			}
			for _, p := range paths {
				if want := "/model/" + testBedrockModel + "/converse-stream"; p != want {
					t.Errorf("request path %q, want %q", p, want)
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

// TestBedrockStreamsInOrder checks that deltas reach the writer as they
// arrive, in stream order, with the tool call after the text before it.
func TestBedrockStreamsInOrder(t *testing.T) {
	t.Parallel()
	m, _ := newTestBedrock(t, nil, "tool_call.json")
	w := &recorder{}
	if err := m.Complete(context.Background(), simpleRequest(), w); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range w.all() {
		kinds = append(kinds, c.Kind)
	}
	if got, want := strings.Join(kinds, ","), "text,tool,usage"; got != want {
		t.Errorf("writer calls %s, want %s", got, want)
	}
}

func TestBedrockRequestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		mod    func(*Config)
	}{
		{"bedrock/request_rich.golden.json", nil},
		{"bedrock/request_rich_noimages_status.golden.json", func(c *Config) {
			c.Images = false
			c.Bedrock.ToolResultStatus = true
		}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			m, srv := newTestBedrock(t, tc.mod, "text_only.json")
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

// TestBedrockToolConfig pins how toolConfig follows the history: absent when
// nothing is offered or referenced, and with a do-not-call spec for
// receive_event__injected when only history references it.
func TestBedrockToolConfig(t *testing.T) {
	t.Parallel()
	injected := []runtime.Item{
		{Kind: runtime.ItemUser, Text: "watch the build"},
		{Kind: runtime.ItemToolCall, CallID: "evt_1", Name: runtime.InjectedToolName, Args: `{"original_tool_name":"ci"}`},
		{Kind: runtime.ItemToolResult, CallID: "evt_1", Name: runtime.InjectedToolName, Text: "build green"},
	}
	tests := []struct {
		name    string
		history []runtime.Item
		tools   []runtime.ToolSpec
		want    []string // tool names in toolConfig; nil: no toolConfig
	}{
		{"no tools, no tool history", []runtime.Item{{Kind: runtime.ItemUser, Text: "hi"}}, nil, nil},
		{"offered tools only", []runtime.Item{{Kind: runtime.ItemUser, Text: "hi"}}, []runtime.ToolSpec{weatherTool}, []string{"chart"}},
		{"injected event, no tools offered", injected, nil, []string{runtime.InjectedToolName}},
		{"injected event and offered tools", injected, []runtime.ToolSpec{weatherTool}, []string{"chart", runtime.InjectedToolName}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, srv := newTestBedrock(t, nil, "text_only.json")
			req := &runtime.CompletionRequest{History: tt.history, Tools: tt.tools}
			if err := m.Complete(context.Background(), req, &recorder{}); err != nil {
				t.Fatal(err)
			}
			_, bodies := srv.requests()
			var body struct {
				ToolConfig *struct {
					Tools []struct {
						ToolSpec struct {
							Name        string `json:"name"`
							Description string `json:"description"`
						} `json:"toolSpec"`
					} `json:"tools"`
				} `json:"toolConfig"`
			}
			if err := json.Unmarshal(bodies[0], &body); err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if body.ToolConfig != nil {
					t.Fatalf("toolConfig sent without tools: %s", bodies[0])
				}
				return
			}
			if body.ToolConfig == nil {
				t.Fatalf("no toolConfig in %s", bodies[0])
			}
			var names []string
			for _, tl := range body.ToolConfig.Tools {
				names = append(names, tl.ToolSpec.Name)
				if tl.ToolSpec.Name == runtime.InjectedToolName && !strings.Contains(tl.ToolSpec.Description, "Do not call") {
					t.Errorf("injected tool description %q does not say not to call it", tl.ToolSpec.Description)
				}
			}
			if fmt.Sprint(names) != fmt.Sprint(tt.want) {
				t.Errorf("toolConfig tools = %v, want %v", names, tt.want)
			}
		})
	}
}

func TestBedrockContextCanceled(t *testing.T) {
	t.Parallel()
	m, _ := newTestBedrock(t, nil, "text_only.json")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := m.Complete(ctx, simpleRequest(), &recorder{})
	if err == nil || runtime.IsPermanent(err) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want a retryable error wrapping context.Canceled, got %v", err)
	}
}

func TestBedrockBadToolSchemaIsPermanent(t *testing.T) {
	t.Parallel()
	m, srv := newTestBedrock(t, nil, "text_only.json")
	req := simpleRequest()
	req.Tools = []runtime.ToolSpec{{Name: "broken", InputSchema: json.RawMessage(`[1,2]`)}}
	err := m.Complete(context.Background(), req, &recorder{})
	checkOutcome(t, 1, err, "permanent", testBedrockModel, `tool "broken"`)
	if paths, _ := srv.requests(); len(paths) != 0 {
		t.Errorf("a request was sent for a request that cannot be built")
	}
}

// writeLoopTransport answers like net/http's transport under a fast server:
// it sends the request body's ContentLength bytes, returns the response at
// once, and only when the response body is first read (after the SDK has
// closed the request body it built, which it does as soon as Do returns)
// does what net/http's write loop does last for a body of known length:
// copy the rest of the body to io.Discard to see that nothing is left. An
// error there makes net/http close the connection, so this transport then
// fails the response body's reads the way net/http does.
type writeLoopTransport struct{ stream []byte }

func (tr writeLoopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, err := io.Copy(io.Discard, io.LimitReader(req.Body, req.ContentLength)); err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}},
		Body:    &afterWriteLoop{req: req, rest: bytes.NewReader(tr.stream)},
		Request: req, ContentLength: -1}, nil
}

type afterWriteLoop struct {
	req     *http.Request
	checked bool
	err     error
	rest    *bytes.Reader
}

func (b *afterWriteLoop) Read(p []byte) (int, error) {
	if !b.checked {
		b.checked = true
		if _, err := io.CopyBuffer(io.Discard, b.req.Body, make([]byte, 512)); err != nil {
			b.err = fmt.Errorf("read tcp: use of closed network connection (the write loop's check of the request body failed: %v)", err)
		}
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.rest.Read(p)
}

func (b *afterWriteLoop) Close() error { return nil }

// TestDetachedBodyKeepsTheStream: a completion streams whole although the
// transport checks the request body after the SDK closed it (the flake of
// TestBedrockStreamOutlivesTheOldTimeout, made deterministic). It fails
// when newBedrock passes its HTTP client to the SDK without detachedBody:
// the SDK's closed body answers that check with io.EOF.
func TestDetachedBodyKeepsTheStream(t *testing.T) {
	t.Parallel()
	var stream bytes.Buffer
	enc := eventstream.NewEncoder()
	for _, f := range []struct{ event, payload string }{
		{"messageStart", `{"role":"assistant"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"whole "}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"answer"}}`},
		{"contentBlockStop", `{"contentBlockIndex":0}`},
		{"messageStop", `{"stopReason":"end_turn"}`},
		{"metadata", `{"usage":{"inputTokens":5,"outputTokens":2,"totalTokens":7},"metrics":{"latencyMs":1}}`},
	} {
		var msg eventstream.Message
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		msg.Headers.Set(":event-type", eventstream.StringValue(f.event))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Payload = []byte(f.payload)
		if err := enc.Encode(&stream, msg); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Name: "claude", Provider: ProviderBedrock, ModelID: testBedrockModel, ContextWindow: 200000,
		MaxOutputTokens: 8192, Bedrock: &BedrockConfig{Endpoint: "http://bedrock.invalid"}}
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")}
	m, err := FromConfig(context.Background(), cfg, WithAWSConfig(awsCfg),
		WithHTTPClient(&http.Client{Transport: writeLoopTransport{stream: stream.Bytes()}}))
	if err != nil {
		t.Fatal(err)
	}
	var w recorder
	if err := m.Complete(context.Background(), simpleRequest(), &w); err != nil {
		t.Fatalf("the stream failed: %v", err)
	}
	if got := w.joined("text"); got != "whole answer" {
		t.Fatalf("streamed %q, want %q", got, "whole answer")
	}
}
