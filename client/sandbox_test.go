package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSandboxCalls: each sandbox call sends its method, path and body,
// and a 409 of apply is an *APIError with the server's reason (a
// stand-in server checks the requests; cmd/agentslice TestCodeReviewApplyDiscard
// runs them against a real serve).
func TestSandboxCalls(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+" "+string(b))
		switch r.URL.Path {
		case "/threads/t 1/sandbox":
			io.WriteString(w, `{"thread":"t 1","branch":"agentslice/t1","dir":"/w","base":"abc","files":["a.go"],"new_field":1}`)
		case "/threads/t 1/sandbox/diff":
			io.WriteString(w, "diff --git a/a.go b/a.go\n")
		case "/threads/t 1/sandbox/apply":
			w.WriteHeader(http.StatusConflict)
			json.NewEncoder(w).Encode(map[string]any{"error": "a.go has uncommitted changes", "reason": "dirty", "files": []string{"a.go"}})
		case "/threads/t 1/sandbox/discard":
			io.WriteString(w, `{"discarded":"agentslice/t1"}`)
		}
	}))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	ctx := context.Background()
	sb, err := c.Sandbox(ctx, "t 1")
	if err != nil || sb.Branch != "agentslice/t1" || len(sb.Files) != 1 {
		t.Fatalf("Sandbox: %+v, %v", sb, err)
	}
	if d, err := c.SandboxDiff(ctx, "t 1"); err != nil || d != "diff --git a/a.go b/a.go\n" {
		t.Fatalf("SandboxDiff: %q, %v", d, err)
	}
	_, err = c.SandboxApply(ctx, "t 1", "msg")
	if !IsConflict(err) || IsNotFound(err) || err.Error() != "409 Conflict: a.go has uncommitted changes" {
		t.Fatalf("SandboxApply: %v", err)
	}
	if b, err := c.SandboxDiscard(ctx, "t 1"); err != nil || b != "agentslice/t1" {
		t.Fatalf("SandboxDiscard: %q, %v", b, err)
	}
	want := []string{"GET /threads/t 1/sandbox ", "GET /threads/t 1/sandbox/diff ", `POST /threads/t 1/sandbox/apply {"message":"msg"}`, "POST /threads/t 1/sandbox/discard "}
	if len(got) != len(want) {
		t.Fatalf("requests %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d = %q, want %q", i, got[i], want[i])
		}
	}
}
