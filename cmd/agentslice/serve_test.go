package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentslice/agentslice/internal/server"
)

func TestMain(m *testing.M) {
	daemonCommand = testDaemonCommand // the daemon is this binary too (remote_test.go), also one a child starts
	if args := os.Getenv(childEnv); args != "" {
		os.Exit(runChild(args)) // this binary was started as a server (or a CLI) by a test
	}
	goleak.VerifyTestMain(m)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServeRejectsBadConfiguration: a bad file or flag stops serve before
// it listens, with an error naming the file and field or the flag.
func TestServeRejectsBadConfiguration(t *testing.T) {
	t.Parallel()
	bad := writeFile(t, "serve.json", `{"tool_servers": ["ftp://tools"]}`)
	typo := writeFile(t, "typo.json", `{"listen": "127.0.0.1:0", "mcp_server": []}`)
	typo2 := writeFile(t, "ok.json", `{"listen": "127.0.0.1:0"}`)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"bad field", []string{"-config", bad}, []string{bad, `field "tool_servers[0]"`, "absolute http(s) URL"}},
		{"unknown field", []string{"-config", typo}, []string{typo, `field "mcp_server"`, "unknown field"}},
		{"missing file", []string{"-config", "/no/such/serve.json"}, []string{"/no/such/serve.json", "no such file"}},
		{"bad flag value", []string{"-config", typo2, "-listen", "nowhere"}, []string{"from flag -listen", `field "listen"`, "host:port"}},
		{"bad -mcp", []string{"-mcp", "everything"}, []string{"flag -mcp", "name=command"}},
		{"bad -tool-server", []string{"-tool-server", "tools.local"}, []string{`field "tool_servers[0]"`}},
		{"missing script", []string{"-script", "/no/such/script.json"}, []string{`field "script"`}},
		{"bad -sandbox-repo", []string{"-sandbox-repo", "/no/such/repo"}, []string{"from flag -sandbox-repo", `field "sandbox.repo"`, "not a directory"}},
		{"-sandbox-repo not a repository", []string{"-sandbox-repo", t.TempDir(), "-store", "memory", "-listen", "127.0.0.1:0", "-log-level", "error"},
			[]string{"from flag -sandbox-repo", `field "sandbox.repo"`, "not a git working copy"}},
		{"bad -memory-limit", []string{"-memory-limit", "lots"}, []string{`-memory-limit "lots"`, "GiB"}},
		{"stray argument", []string{"now"}, []string{`unexpected argument "now"`}},
		{"unknown flag", []string{"-port", "80"}, []string{"flag provided but not defined: -port"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := runServe(context.Background(), tc.args, &stdout, &stderr)
			if err == nil {
				t.Fatal("runServe succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestServeFlagsOverrideFile: set flags replace the file's values; unset
// ones leave them.
func TestServeFlagsOverrideFile(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "serve.json", `{"listen": "127.0.0.1:9999", "log_level": "debug",
		"tool_servers": ["http://a", "http://b"], "example_tools": {"run_command": {"allow": ["ls"], "timeout": "1m"}},
		"mcp_servers": [{"name": "old", "url": "http://old/mcp"}]}`)
	f := newServeFlags(io.Discard)
	err := f.fs.Parse([]string{"-config", p, "-listen", "127.0.0.1:0", "-tool-server", "http://c", "-allow-command", "date",
		"-allow-command", "echo", "-get-time", "-mcp", "everything=node server.js stdio", "-mcp", "remote=https://mcp.example.test/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.apply()
	if err != nil {
		t.Fatal(err)
	}
	rc := cfg.ExampleTools.RunCommand
	if cfg.Listen != "127.0.0.1:0" || cfg.LogLevel != "debug" || strings.Join(cfg.ToolServers, " ") != "http://c" ||
		!cfg.ExampleTools.GetTime || strings.Join(rc.Allow, " ") != "date echo" || rc.Timeout != "1m" {
		t.Fatalf("config = %+v", cfg)
	}
	want := []server.MCPServer{{Name: "everything", Command: []string{"node", "server.js", "stdio"}}, {Name: "remote", URL: "https://mcp.example.test/mcp"}}
	if len(cfg.MCPServers) != 2 || cfg.MCPServers[0].Name != want[0].Name || strings.Join(cfg.MCPServers[0].Command, " ") != "node server.js stdio" ||
		cfg.MCPServers[1].URL != want[1].URL {
		t.Fatalf("mcp servers = %+v", cfg.MCPServers)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestServeRunsUntilCancelled: serve listens, answers the API and its
// in-process tool server, and returns nil once its context ends.
func TestServeRunsUntilCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { // owned by this test: waited for below
		done <- runServe(ctx, []string{"-listen", "127.0.0.1:0", "-get-time", "-log-level", "warn", "-data", t.TempDir()}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading serve's first line: %v (serve: %v)", err, <-done)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "agentslice serve: listening on ")
	if !ok {
		t.Fatalf("first line %q", line)
	}
	get := func(path string, out any) {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	var health map[string]any
	get("/healthz", &health)
	if health["status"] != "ok" || health["model"] != "sim" {
		t.Fatalf("healthz = %v", health)
	}
	var toolset struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	get("/tools/examples/.well-known/rap-toolset", &toolset)
	if len(toolset.Tools) != 1 || toolset.Tools[0].Name != "get_time" {
		t.Fatalf("toolset = %+v", toolset)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runServe = %v after cancel, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runServe did not return after cancel")
	}
}

// TestServeDocExamples: the configuration and scripts the README's serve section uses
// load and validate.
func TestServeDocExamples(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "docs", "examples", "serve")
	configs := map[string]bool{"serve.json": true, "agents.json": true, "budget.json": true, "coder.json": true} // the rest are scripts
	for name := range configs {
		cfg, err := server.LoadConfig(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "agents.json" && (len(cfg.Agents) != 2 || cfg.DefaultAgent == "") {
			t.Errorf("agents.json defines %d agents (default %q), want two and a default", len(cfg.Agents), cfg.DefaultAgent)
		}
		if name == "budget.json" && (len(cfg.Agents) != 1 || cfg.Agents[0].Budget == nil || cfg.Models == nil || cfg.Models.Models[0].Price == nil) {
			t.Errorf("budget.json: want one agent with a budget and a priced model (docs/budgets.md)")
		}
	}
	scripts, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, p := range scripts {
		if configs[filepath.Base(p)] {
			continue
		}
		c := server.Config{Script: p}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if len(scripts) < 4 {
		t.Fatalf("found %d example files", len(scripts))
	}
}
