package server

import (
	"net"
	"net/http"
	"strings"
	"testing"
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
