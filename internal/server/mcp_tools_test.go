package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// TestMCPServerStderrIsReported: an MCP server that dies at start is
// reported with what it wrote to stderr (in the start error and line by line
// in the log), and its toolset answers 503 with the same reason instead of
// offering tools that cannot work.
func TestMCPServerStderrIsReported(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	logs := &logBuffer{}
	srv, err := New(context.Background(), Config{Listen: "127.0.0.1:0", Store: "memory",
		MCPServers: []MCPServer{{Name: "broken", Command: []string{"sh", "-c", "echo 'Error: Cannot find module /app/server.js' >&2; exit 1"}}}},
		Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	resp, err := http.Get(srv.URL() + ToolsPrefix + "mcp/broken/.well-known/rap-toolset")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "Cannot find module /app/server.js") {
		t.Fatalf("toolset: %d %s", resp.StatusCode, body)
	}
	l := logs.String()
	for _, want := range []string{`msg="mcp: server stderr" proxy=broken line="Error: Cannot find module /app/server.js"`,
		"MCP server cannot start", "stderr ended with:\\nError: Cannot find module /app/server.js"} {
		if !strings.Contains(l, want) {
			t.Fatalf("log lacks %s:\n%s", want, l)
		}
	}
}

// TestInProcessToolNames: a call to an MCP server's tool (first-class or a
// meta-tool) is known to be in-process, so a restart answers it.
func TestInProcessToolNames(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: Config{MCPServers: []MCPServer{{Name: "everything", Command: []string{"x"}}}}}
	for name, want := range map[string]bool{"everything__echo": true, "everything__get-sum": true, "everything_invoke_tool": true,
		"everything_list_tools": true, "other__echo": false, "everythingecho": false} {
		if got := s.inProcessTool(name); got != want {
			t.Errorf("inProcessTool(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestMCPMetaToolsConfig: an MCP server is offered as one tool per MCP tool,
// or with meta_tools as the two meta-tools.
func TestMCPMetaToolsConfig(t *testing.T) {
	t.Parallel()
	everything := everythingServer(t)
	srv := startServer(t, Config{Store: "memory", MCPServers: []MCPServer{
		{Name: "direct", Command: []string{"node", everything, "stdio"}},
		{Name: "meta", Command: []string{"node", everything, "stdio"}, MetaTools: true}}})
	names := func(server string) string {
		t.Helper()
		resp, err := http.Get(srv.URL() + ToolsPrefix + "mcp/" + server + "/.well-known/rap-toolset")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ts struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&ts); err != nil {
			t.Fatalf("%s: %v", server, err)
		}
		var out []string
		for _, tl := range ts.Tools {
			out = append(out, tl.Name)
		}
		return strings.Join(out, " ")
	}
	if got := names("direct"); !strings.Contains(got, "direct__echo") || !strings.Contains(got, "direct__get-sum") || strings.Contains(got, "invoke_tool") {
		t.Fatalf("direct offers %s", got)
	}
	if got := names("meta"); got != "meta_list_tools meta_invoke_tool" {
		t.Fatalf("meta offers %s", got)
	}
}
