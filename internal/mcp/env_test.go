package mcp

import (
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/mcp/mcptest"
	"github.com/agentslice/agentslice/internal/runtime"
)

// TestProxySubprocessGetsNoSecrets: a real stdio MCP server that reports
// its environment sees PATH and its configured entries, never the
// runtime's AGENTSLICE_* secrets, with and without configured entries.
func TestProxySubprocessGetsNoSecrets(t *testing.T) {
	t.Setenv("AGENTSLICE_CALLBACK_KEYS", "k1:c2VjcmV0LWNhbGxiYWNrLWtleQ")
	t.Setenv("AGENTSLICE_TOKEN", "secret-api-token")
	t.Setenv("UNRELATED_SECRET", "db-password")
	argv, err := mcptest.EnvServerCommand()
	if err != nil {
		t.Fatal(err)
	}
	for name, env := range map[string][]string{"default": nil, "configured": {"FOO=bar", "AGENTSLICE_TOKEN=configured-too"}} {
		t.Run(name, func(t *testing.T) {
			rig, base := startProxy(t, Config{Command: argv, Env: env})
			if err := rig.Invoke(t, base, "thr_env", "call_env", "everything__"+mcptest.EnvToolName, `{}`); err != nil {
				t.Fatal(err)
			}
			m := rig.Next(t)
			if m.Kind != runtime.KindToolResult || m.IsError {
				t.Fatalf("message %+v", m)
			}
			text := m.Text
			for _, c := range m.Content {
				text += c.Text
			}
			for _, secret := range []string{"AGENTSLICE_", "c2VjcmV0LWNhbGxiYWNrLWtleQ", "secret-api-token", "configured-too", "db-password"} {
				if strings.Contains(text, secret) {
					t.Fatalf("the MCP server saw %q:\n%s", secret, text)
				}
			}
			want := "PATH="
			if env != nil {
				want = "FOO=bar"
			}
			if !strings.Contains(text, want) {
				t.Fatalf("the MCP server's environment lacks %s:\n%s", want, text)
			}
		})
	}
}
