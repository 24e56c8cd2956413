package server

import (
	"context"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestMCPServerThatCannotStartIsReported: serve starts, and says at once
// which configured MCP server cannot start.
func TestMCPServerThatCannotStartIsReported(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	srv, err := New(context.Background(), Config{Listen: "127.0.0.1:0", Store: "memory",
		MCPServers: []MCPServer{{Name: "broken", Command: []string{"/nonexistent/mcp-server"}}}},
		Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if l := logs.String(); !strings.Contains(l, "MCP server cannot start") || !strings.Contains(l, "config=mcp_servers[0]") {
		t.Fatalf("log:\n%s", l)
	}
}

// TestMCPEnvAddsToParent: mcp_servers[].env adds to the server's
// environment instead of replacing it, and a configured entry wins.
func TestMCPEnvAddsToParent(t *testing.T) {
	t.Parallel()
	if mcpEnv(nil, []string{"PATH=/bin"}) != nil {
		t.Fatal("no env configured: the subprocess should inherit (nil)")
	}
	env := mcpEnv([]string{"TOKEN=x", "HOME=/override"}, []string{"PATH=/bin", "HOME=/root"})
	if !slices.Contains(env, "PATH=/bin") || !slices.Contains(env, "TOKEN=x") {
		t.Fatalf("env %v", env)
	}
	// What a subprocess sees: exec keeps the last value of a key.
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command("sh", "-c", `printf '%s %s' "$HOME" "$TOKEN"`)
	cmd.Env = mcpEnv([]string{"TOKEN=x", "HOME=/override"}, append(cmd.Environ(), "HOME=/root"))
	out, err := cmd.Output()
	if err != nil || string(out) != "/override x" {
		t.Fatalf("subprocess saw %q (%v)", out, err)
	}
	var ce *ConfigError
	cfg := Config{MCPServers: []MCPServer{{Name: "a", Command: []string{"x"}, Env: []string{"OK=1", "broken"}}}}
	if err := cfg.Validate(); err == nil || !asConfigError(err, &ce) || ce.Field != "mcp_servers[0].env[1]" {
		t.Fatalf("Validate = %v", err)
	}
}

func asConfigError(err error, target **ConfigError) bool {
	ce, ok := err.(*ConfigError)
	if ok {
		*target = ce
	}
	return ok
}
