package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/model"
)

func TestLoadConfigFull(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(filepath.Join("testdata", "config", "full.json"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := cfg.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if s.publicURL != "http://agents.example.test:8080" || s.model.Name != "fast" || s.model.Provider != model.ProviderSim ||
		s.callbackTTL != 24*time.Hour || s.keepAlive != 5*time.Second || s.freezeEvery != 10*time.Second ||
		s.freezeIdle != 20*time.Second || s.commandTimeout != time.Minute || s.eventBuffer != 32 || s.maxBody != 65536 ||
		s.maxListed != 100 || s.checkpointRecords != 20000 || s.logLevel.String() != "DEBUG" {
		t.Fatalf("settings = %+v", s)
	}
	if len(cfg.MCPServers) != 2 || cfg.MCPServers[1].URL == "" || !cfg.MCPServers[1].MetaTools || cfg.MCPServers[0].MetaTools || len(cfg.ToolServers) != 2 {
		t.Fatalf("config = %+v", cfg)
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	var cfg Config
	s, err := cfg.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if s.listen != DefaultListen || s.model.Provider != model.ProviderSim || s.freezeEvery != 30*time.Second ||
		s.freezeIdle != time.Minute || s.keepAlive != 15*time.Second || s.maxBody != 1<<20 || s.checkpointRecords != 25000 {
		t.Fatalf("defaults = %+v", s)
	}
}

// TestBadConfig: each mistake is a *ConfigError naming the field.
func TestBadConfig(t *testing.T) {
	t.Parallel()
	script := filepath.Join("..", "..", "internal", "model", "testdata", "script.json") // any valid script
	if abs, err := filepath.Abs(filepath.Join("..", "model", "testdata", "script.json")); err == nil {
		script = abs
	}
	models := `{"default":"a","models":[{"name":"a","provider":"sim","model_id":"s","context_window":10,"max_output_tokens":5}]}`
	cases := []struct {
		name, doc, field, want string
	}{
		{"unknown field", `{"listn":":80"}`, "listn", "unknown field"},
		{"unknown nested field", `{"limits":{"max_completion":3}}`, "limits.max_completion", "unknown field"},
		{"unknown field in a list", `{"mcp_servers":[{"name":"a","command":["x"]},{"name":"b","comand":["y"]}]}`, "mcp_servers[1].comand", "unknown field"},
		{"wrong type in a list", `{"mcp_servers":[{"name":"a","command":["x"]},{"name":"b","command":"y"}]}`, "mcp_servers[1].command", "want an array, got string"},
		{"wrong element type", `{"mcp_servers":[{"name":"a","command":["x", 3]}]}`, "mcp_servers[0].command[1]", "got number"},
		{"wrong nested type", `{"limits":{"max_completions":"8"}}`, "limits.max_completions", "want a number"},
		{"wrong type", `{"tool_servers":"http://x"}`, "tool_servers", "want an array, got string"},
		{"wrong nested type", `{"limits":{"max_completions":"8"}}`, "limits.max_completions", "want a number"},
		{"not an object", `[1]`, "", "want a JSON object"},
		{"syntax error", "{\n  \"listen\": ,\n}", "", "line 2"},
		{"trailing data", `{} {}`, "", "trailing data"},
		{"empty", ``, "", "empty document"},
		{"listen", `{"listen":"nope"}`, "listen", "host:port"},
		{"public url", `{"public_url":"localhost:8080"}`, "public_url", "absolute http(s) URL"},
		{"public url query", `{"public_url":"http://x/?a=1"}`, "public_url", "query"},
		{"tool server", `{"tool_servers":["http://ok", "ftp://x"]}`, "tool_servers[1]", "absolute http(s) URL"},
		{"run_command without commands", `{"example_tools":{"run_command":{"allow":[]}}}`, "example_tools.run_command.allow", "empty"},
		{"run_command timeout", `{"example_tools":{"run_command":{"allow":["ls"],"timeout":"forever"}}}`, "example_tools.run_command.timeout", "duration"},
		{"sandbox without repo", `{"sandbox":{}}`, "sandbox.repo", "missing"},
		{"sandbox repo not a directory", `{"sandbox":{"repo":"/nonexistent/repo"}}`, "sandbox.repo", "not a directory"},
		{"sandbox timeout", `{"sandbox":{"repo":".","timeout":"0s"}}`, "sandbox.timeout", "duration"},
		{"sandbox repos name", `{"sandbox":{"repos":{"a b":"."}}}`, "sandbox.repos.a b", "letters, digits"},
		{"sandbox repos not a directory", `{"sandbox":{"repos":{"x":"/nonexistent/repo"}}}`, "sandbox.repos.x", "not a directory"},
		{"sandbox repo and repos of one name", `{"sandbox":{"repo":".","repos":{"server":"."}}}`, "sandbox.repos", "also sandbox.repo's name"},
		{"sandbox and example run_command", `{"sandbox":{"repo":"."},"example_tools":{"run_command":{"allow":["ls"]}}}`, "sandbox", "unique across toolsets"},
		{"mcp named sandbox", `{"sandbox":{"repo":"."},"mcp_servers":[{"name":"sandbox","command":["x"]}]}`, "mcp_servers[0].name", "sandbox toolset"},
		{"mcp without command or url", `{"mcp_servers":[{"name":"a"}]}`, "mcp_servers[0].command", "exactly one"},
		{"mcp with both", `{"mcp_servers":[{"name":"a","command":["x"],"url":"http://x"}]}`, "mcp_servers[0].command", "exactly one"},
		{"mcp name", `{"mcp_servers":[{"name":"a b","command":["x"]}]}`, "mcp_servers[0].name", "letters, digits"},
		{"mcp duplicate", `{"mcp_servers":[{"name":"a","command":["x"]},{"name":"a","url":"http://x"}]}`, "mcp_servers[1].name", "twice"},
		{"mcp url", `{"mcp_servers":[{"name":"a","url":"x"}]}`, "mcp_servers[0].url", "absolute"},
		{"missing script", `{"script":"/no/such/script.json"}`, "script", "no such file"},
		{"script and models", `{"script":"` + script + `","models":` + models + `}`, "script", "use one of them"},
		{"model without catalog", `{"model":"gpt"}`, "model", "no models catalog"},
		{"model not in catalog", `{"model":"b","models":` + models + `}`, "model", "not in the catalog"},
		{"bad catalog", `{"models":{"default":"a","models":[{"name":"a","provider":"sim","model_id":"s","context_window":10,"max_output_tokens":50}]}}`,
			"models.models[0].max_output_tokens", "no room"},
		{"bad provider", `{"models":{"default":"a","models":[{"name":"a","provider":"palm","model_id":"s","context_window":10,"max_output_tokens":5}]}}`,
			"models.models[0].provider", "unknown provider"},
		{"catalog default", `{"models":{"default":"z","models":[{"name":"a","provider":"sim","model_id":"s","context_window":10,"max_output_tokens":5}]}}`,
			"models.default", "not the name"},
		{"callback ttl", `{"callback_ttl":"-1h"}`, "callback_ttl", "positive duration"},
		{"keep alive", `{"limits":{"keep_alive":"0s"}}`, "limits.keep_alive", "positive duration"},
		{"negative limit", `{"limits":{"event_buffer":-1}}`, "limits.event_buffer", "negative"},
		{"checkpoint records", `{"limits":{"checkpoint_records":-5}}`, "limits.checkpoint_records", "negative"},
		{"freeze every", `{"freeze":{"every":"soon"}}`, "freeze.every", "duration"},
		{"compaction threshold", `{"compaction":{"threshold":1.5}}`, "compaction.threshold", "fraction"},
		{"log level", `{"log_level":"loud"}`, "log_level", "unknown level"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := DecodeConfig([]byte(tc.doc))
			if err == nil {
				err = cfg.Validate()
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T), want a *ConfigError", err, err)
			}
			if ce.Field != tc.field || !strings.Contains(ce.Error(), tc.want) {
				t.Fatalf("error %q (field %q), want field %q and %q", ce.Error(), ce.Field, tc.field, tc.want)
			}
		})
	}
}

func TestLoadConfigNamesTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "serve.json")
	if err := os.WriteFile(p, []byte(`{"listen": 8080}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(p)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), `field "listen"`) {
		t.Fatalf("error %v, want one naming %s and the field", err, p)
	}
	_, err = LoadConfig(filepath.Join(dir, "missing.json"))
	if err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("error %v, want one naming the missing file", err)
	}
}

// TestNewRejectsBadKeys: a malformed keyring is a configuration error,
// naming the environment variable when it came from there.
func TestNewRejectsBadKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, env, field string
	}{
		{"file", "k1:c2hvcnQ", "", "callback_keys"},
		{"environment", "", "k1:c2hvcnQ", CallbackKeysEnv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			_, err := New(context.Background(), Config{CallbackKeys: tc.file}, Options{Getenv: func(k string) string {
				if k == CallbackKeysEnv {
					return env
				}
				return ""
			}})
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("error %v, want a *ConfigError for %s", err, tc.field)
			}
		})
	}
}

// TestStartFailsOnBusyAddress: a listen address in use is a clear error and
// leaves nothing running.
func TestStartFailsOnBusyAddress(t *testing.T) {
	t.Parallel()
	first := startServer(t, Config{})
	addr := strings.TrimPrefix(first.URL(), "http://")
	srv, err := New(context.Background(), Config{Listen: addr, Data: t.TempDir()}, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "listening on "+addr) {
		t.Fatalf("Start = %v, want a listen error naming %s", err, addr)
	}
	srv.Stop()
}

func FuzzDecodeConfig(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "config", "full.json")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"listen":"127.0.0.1:0","limits":{"keep_alive":"1s"}}`))
	f.Add([]byte(`{"mcp_servers":[{"name":"a","command":["x"]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := DecodeConfig(b)
		if err == nil {
			cfg.Script = "" // never read a file the fuzzer names (it could be /dev/zero)
			err = cfg.Validate()
		}
		var ce *ConfigError
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("error %v is a %T, not a *ConfigError", err, err)
		}
	})
}

// TestLoadConfigResolvesCatalogScriptsBesideTheFile: a catalog model's
// scripted.path is relative to the configuration file, as script and
// instructions_file are, not to the working directory.
func TestLoadConfigResolvesCatalogScriptsBesideTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"default": [{"text": "hello"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "serve.json")
	cfg := `{"models": {"default": "s", "models": [{"name": "s", "provider": "scripted", "model_id": "s",
		"context_window": 1000, "max_output_tokens": 100, "scripted": {"path": "s.json"}}]}}`
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Models.Models[0].Scripted.Path, filepath.Join(dir, "s.json"); got != want {
		t.Fatalf("scripted.path %q, want %q (beside the file)", got, want)
	}
	if _, err := c.modelConfig(); err != nil {
		t.Fatalf("the model from a directory other than the file's: %v", err)
	}
}
