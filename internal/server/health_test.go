package server

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type healthBody struct {
	Status     string      `json:"status"`
	Components []component `json:"components"`
}

func (h healthBody) component(kind string) component {
	for _, c := range h.Components {
		if c.Kind == kind {
			return c
		}
	}
	return component{}
}

// TestHealthReportsEachPart: with a tool server that is down and an MCP
// server that cannot start, /healthz stays 200 (liveness) but says
// degraded, naming each part and why; /readyz is 503. A server whose parts
// are all up is ready.
func TestHealthReportsEachPart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	srv := startServer(t, Config{Store: StoreMemory, ToolServers: []string{down},
		MCPServers: []MCPServer{{Name: "gone", Command: []string{t.TempDir() + "/no-such-mcp-server"}}}})
	var h healthBody
	if code := do(t, http.MethodGet, srv.URL()+"/healthz", "", &h); code != http.StatusOK || h.Status != "degraded" {
		t.Fatalf("healthz %d %+v, want 200 degraded", code, h)
	}
	if c := h.component("tool_server"); c.Name != down || c.Status != "degraded" || !strings.Contains(c.Reason, "unreachable") {
		t.Fatalf("tool server %+v", c)
	}
	if c := h.component("mcp_server"); c.Name != "gone" || c.Status != "degraded" || !strings.Contains(c.Reason, "unreachable") {
		t.Fatalf("MCP server %+v", c)
	}
	if c := h.component("store"); c.Status != "ok" {
		t.Fatalf("store %+v", c)
	}
	var r healthBody
	if code := do(t, http.MethodGet, srv.URL()+"/readyz", "", &r); code != http.StatusServiceUnavailable || r.Status != "not_ready" {
		t.Fatalf("readyz %d %+v, want 503", code, r)
	}

	ok := startServer(t, Config{Store: StoreMemory})
	if code := do(t, http.MethodGet, ok.URL()+"/readyz", "", &r); code != http.StatusOK || r.Status != "ready" {
		t.Fatalf("readyz of a healthy server %d %+v", code, r)
	}
	if code := do(t, http.MethodGet, ok.URL()+"/healthz", "", &h); code != http.StatusOK || h.Status != "ok" {
		t.Fatalf("healthz of a healthy server %d %+v", code, h)
	}
}

// TestHealthProbesAreShared: /healthz and /readyz take no token, and each
// probe reaches every configured tool server, so requests within
// healthReportTTL share one probe instead of each fetching the toolsets.
func TestHealthProbesAreShared(t *testing.T) {
	t.Parallel()
	var fetches atomic.Int32
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		http.NotFound(w, r) // a tool server that is up but has no toolset: degraded, and counted
	}))
	t.Cleanup(tool.Close)
	var clock atomic.Int64 // the health report's clock, in Unix nanoseconds
	clock.Store(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	srv := startServer(t, Config{Store: StoreMemory, ToolServers: []string{tool.URL}})
	srv.health.now = func() time.Time { return time.Unix(0, clock.Load()) } // one instant: no request is past the TTL
	start := fetches.Load()                                                 // start-up fetched the toolset already
	var h healthBody
	for _, path := range []string{"/healthz", "/readyz", "/healthz"} {
		do(t, http.MethodGet, srv.URL()+path, "", &h)
	}
	if got := fetches.Load() - start; got != 1 {
		t.Fatalf("three health requests at one instant fetched the toolset %d times, want 1", got)
	}
	clock.Add(int64(healthReportTTL))
	do(t, http.MethodGet, srv.URL()+"/healthz", "", &h)
	if got := fetches.Load() - start; got != 2 {
		t.Fatalf("a request a TTL later fetched the toolset %d times in all, want 2 (a fresh probe)", got)
	}
}
