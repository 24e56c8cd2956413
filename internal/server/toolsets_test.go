package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// flakyToolServer is a RAP tool server announcing the toolset "github"
// (one tool, gh_issue), or answering 503 to everything while down.
type flakyToolServer struct {
	url  string
	down atomic.Bool
}

func (f *flakyToolServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.down.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/.well-known/rap-toolset" {
		_ = json.NewEncoder(w).Encode(rap.Toolset{Name: "github", Endpoint: f.url + "/invoke",
			Tools: []rap.ToolDef{{Name: "gh_issue", Description: "Opens an issue.", InputSchema: json.RawMessage(`{"type":"object"}`)}}})
		return
	}
	_, _ = w.Write([]byte(`{}`))
}

// systemRecorder is a model that replies "ok" and records, per thread,
// the system prompt and tool names of each completion.
type systemRecorder struct {
	mu  sync.Mutex
	got map[string][]runtime.CompletionRequest
}

func (m *systemRecorder) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	m.mu.Lock()
	if m.got == nil {
		m.got = map[string][]runtime.CompletionRequest{}
	}
	m.got[req.ThreadID] = append(m.got[req.ThreadID], runtime.CompletionRequest{System: req.System, Tools: slices.Clone(req.Tools)})
	m.mu.Unlock()
	w.Text("ok")
	return nil
}

func (m *systemRecorder) last(t *testing.T, thread string) runtime.CompletionRequest {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	reqs := m.got[thread]
	if len(reqs) == 0 {
		t.Fatalf("no completion for %s", thread)
	}
	return reqs[len(reqs)-1]
}

func toolNames(req runtime.CompletionRequest) []string {
	var out []string
	for _, sp := range req.Tools {
		out = append(out, sp.Name)
	}
	return out
}

func unavailable(t *testing.T, srv *Server) []string {
	t.Helper()
	var h struct {
		Unavailable []string `json:"unavailable_toolsets"`
	}
	if code := do(t, http.MethodGet, srv.URL()+"/healthz", "", &h); code != http.StatusOK {
		t.Fatalf("/healthz answered %d", code)
	}
	return h.Unavailable
}

// TestDegradedStartWhenAToolServerIsDown: an agent allows a toolset whose
// server is down at start. serve starts anyway, /healthz lists the toolset
// as unavailable, and the model is told it is unavailable and will be
// retried; once the server is back, a recheck clears the report and a new
// thread is offered its tools.
func TestDegradedStartWhenAToolServerIsDown(t *testing.T) {
	t.Parallel()
	tools := &flakyToolServer{}
	ts := httptest.NewServer(tools)
	t.Cleanup(ts.Close)
	tools.url = ts.URL
	tools.down.Store(true)
	rec := &systemRecorder{}
	srv := startServerOpts(t, Config{Store: "memory", ToolServers: []string{ts.URL},
		Agents: []AgentConfig{{Agent: runtime.Agent{Name: "rev", Instructions: "You review.", Tools: []string{"github", "threads"}}}}},
		Options{Model: rec})
	if got := unavailable(t, srv); !slices.Equal(got, []string{"github"}) {
		t.Fatalf("/healthz unavailable_toolsets = %v, want [github]", got)
	}

	postMessage(t, srv, "t1", `{"text":"file it"}`)
	waitIdle(t, srv)
	req := rec.last(t, "t1")
	if !strings.HasPrefix(req.System, "You review.") || !strings.Contains(req.System, "github") || !strings.Contains(req.System, "unavailable") ||
		!strings.Contains(req.System, "retried") || slices.Contains(toolNames(req), "gh_issue") || !slices.Contains(toolNames(req), "spawn_thread") {
		t.Fatalf("degraded completion: system %q, tools %v", req.System, toolNames(req))
	}

	tools.down.Store(false)
	if n := srv.recheckToolsetsOnce(t.Context()); n != 0 {
		t.Fatalf("recheck: %d toolsets still unavailable", n)
	}
	if got := unavailable(t, srv); len(got) != 0 {
		t.Fatalf("/healthz unavailable_toolsets = %v after the server came back", got)
	}
	postMessage(t, srv, "t2", `{"text":"file it"}`)
	waitIdle(t, srv)
	if req := rec.last(t, "t2"); req.System != "You review." || !slices.Contains(toolNames(req), "gh_issue") {
		t.Fatalf("after recovery: system %q, tools %v", req.System, toolNames(req))
	}
}
