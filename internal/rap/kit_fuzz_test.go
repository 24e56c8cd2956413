package rap

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// refuseTransport fails every request: fuzzed callback URLs must never
// reach the network.
type refuseTransport struct{}

func (refuseTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("fuzz: network disabled")
}

func fuzzKit(f *testing.F) *Server {
	kit, err := NewServer(ServerConfig{Name: "fuzz", Logger: quietLogger(), Retry: RetryPolicy{Attempts: 1},
		Client: &http.Client{Transport: refuseTransport{}},
		Tools: []Tool{{Name: "echo", Description: "echo",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
			Run:         func(ctx context.Context, c *Call) error { return c.Result(ctx, "ok") }}}})
	if err != nil {
		f.Fatal(err)
	}
	if err := kit.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(kit.Stop)
	return kit
}

// fuzzKitPath drives one kit endpoint with arbitrary bodies. Whatever
// arrives, the kit answers without panicking, with 200 or a 4xx (503 only
// when too many calls run), a JSON body, and, for /tool_call_status, a 200
// only with exactly {"alive": bool}.
func fuzzKitPath(f *testing.F, path string, seeds ...string) {
	kit := fuzzKit(f)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "http://tool.example.com"+path, strings.NewReader(string(body)))
		kit.ServeHTTP(w, r)
		switch {
		case w.Code == http.StatusOK:
		case w.Code >= 400 && w.Code < 500:
		case w.Code == http.StatusServiceUnavailable && path == InvokePath:
		default:
			t.Fatalf("%s answered %d to %q", path, w.Code, body)
		}
		if path == ToolCallStatusPath && w.Code == http.StatusOK {
			var ans map[string]json.RawMessage
			if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil || len(ans) != 1 ||
				(string(ans["alive"]) != "true" && string(ans["alive"]) != "false") {
				t.Fatalf("status answer %q is not {\"alive\": bool}", w.Body.String())
			}
		}
	})
}

func FuzzKitInvoke(f *testing.F) {
	fuzzKitPath(f, InvokePath,
		`{"operation":"echo","arguments":{"text":"x"},"id":"call_1","call_id":null,"callback_url":"https://agent.example.com/callback","group_id":"thread_xyz"}`,
		`{"operation":"subscribe_github_events","arguments":{"owner":"acme","repo":"api","event_type":"pull_request"},"id":"call_abc123","call_id":null,"callback_url":"https://agent.example.com/callback","group_id":"thread_xyz","thread_ancestors":["thread_root","thread_parent"],"user_id":"user_42"}`,
		`{"operation":"echo","arguments":{"text":3},"id":"c","callback_url":"https://a.example.com/","group_id":"g"}`,
		`{"operation":"echo"}`, `[]`, `{`)
}

func FuzzKitCancel(f *testing.F) {
	fuzzKitPath(f, CancelToolCallPath, `{"thread_id":"thread_xyz","tool_call_id":"call_abc123"}`, `{}`, `{"thread_id":1}`, `null`)
}

func FuzzKitClose(f *testing.F) {
	fuzzKitPath(f, CloseThreadPath, `{"thread_id":"thread_xyz"}`, `{}`, `{"thread_id":[]}`, `"x"`)
}

func FuzzKitStatus(f *testing.F) {
	fuzzKitPath(f, ToolCallStatusPath, `{"thread_id":"thread_xyz","tool_call_id":"call_abc123"}`,
		`{"thread_id":"","tool_call_id":"c"}`, `{"thread_id":"t\u0000","tool_call_id":"c"}`, `{}`, `1`)
}
