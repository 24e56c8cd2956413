package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/mcp/mcptest"
	"github.com/agentslice/agentslice/internal/runtime"
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

// TestMCPEnvConfig: mcp_servers[].env and pass_env are checked, and
// neither may name an AGENTSLICE_* variable.
func TestMCPEnvConfig(t *testing.T) {
	t.Parallel()
	for field, cfg := range map[string]Config{
		"mcp_servers[0].env[1]": {MCPServers: []MCPServer{{Name: "a", Command: []string{"x"}, Env: []string{"OK=1", "broken"}}}},
		"mcp_servers[0].env[0]": {MCPServers: []MCPServer{{Name: "a", Command: []string{"x"}, Env: []string{"AGENTSLICE_TOKEN=x"}}}},
		"pass_env[1]":           {PassEnv: []string{"GOPATH", "AGENTSLICE_*"}},
	} {
		var ce *ConfigError
		if err := cfg.Validate(); err == nil || !asConfigError(err, &ce) || ce.Field != field {
			t.Errorf("%s: Validate = %v", field, err)
		}
	}
	if err := (&Config{PassEnv: []string{"GOPATH", "AWS_*"}, MCPServers: []MCPServer{{Name: "a", Command: []string{"x"}, Env: []string{"HOME=/h"}}}}).Validate(); err != nil {
		t.Fatalf("a valid environment: %v", err)
	}
}

// TestServeMCPGetsNoSecrets: serve runs a real stdio MCP server that
// reports its environment; the model calls it through the engine, and
// neither the callback keys nor the API token (both set in serve's
// environment) reach the tool, history or the model. pass_env and env
// still reach the tool.
func TestServeMCPGetsNoSecrets(t *testing.T) {
	t.Setenv("AGENTSLICE_CALLBACK_KEYS", "k1:c2VjcmV0LWNhbGxiYWNrLWtleQ")
	t.Setenv("AGENTSLICE_TOKEN", "secret-api-token")
	t.Setenv("PASSED_ON", "yes")
	argv, err := mcptest.EnvServerCommand()
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, Config{Script: testdata(t, "mcp_env_script.json"), PassEnv: []string{"PASSED_*"},
		MCPServers: []MCPServer{{Name: "envsrv", Command: argv, Env: []string{"CONFIGURED=1"}}}})
	const thread = "thr_mcp_env"
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"Show me your environment."}`)
	if ev := events.nextOf(t, "reply"); ev.Data.Text != "I have seen the environment." {
		t.Fatalf("event %+v, want the final reply", ev)
	}
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	i := slices.IndexFunc(th.Items, func(it runtime.Item) bool {
		return it.Kind == runtime.ItemToolResult && it.Name == "envsrv__environment"
	})
	if i < 0 || th.Items[i].IsError {
		t.Fatalf("no MCP result in %s", kinds(th.Items))
	}
	text := th.Items[i].Text
	for _, c := range th.Items[i].Content {
		text += c.Text
	}
	for _, want := range []string{"PASSED_ON=yes", "CONFIGURED=1", "PATH="} {
		if !strings.Contains(text, want) {
			t.Fatalf("the MCP server's environment lacks %s:\n%s", want, text)
		}
	}
	all, err := json.Marshal(th)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"AGENTSLICE_", "c2VjcmV0LWNhbGxiYWNrLWtleQ", "secret-api-token"} {
		if strings.Contains(string(all), secret) {
			t.Fatalf("history holds %q:\n%s", secret, text)
		}
	}
}

func asConfigError(err error, target **ConfigError) bool {
	ce, ok := err.(*ConfigError)
	if ok {
		*target = ce
	}
	return ok
}
