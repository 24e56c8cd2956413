package mcp

import (
	"bufio"
	"encoding/base64"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv"
)

// everythingServer returns the path of the npm MCP reference server
// (@modelcontextprotocol/server-everything, pinned in the repo-root
// package.json; `npm ci` installs it). Without it (or without node) the test
// is skipped, unless AGENTSLICE_REQUIRE_SERVICES=1.
func everythingServer(t *testing.T) string {
	t.Helper()
	return testenv.NodeModule(t, "@modelcontextprotocol/server-everything/dist/index.js")
}

func startProxy(t *testing.T, cfg Config) (*raptest.Rig, string) {
	t.Helper()
	rig, base, _ := startProxyP(t, cfg)
	return rig, base
}

func startProxyP(t *testing.T, cfg Config) (*raptest.Rig, string, *Proxy) {
	t.Helper()
	rig := raptest.NewRig(t)
	cfg.Name = "everything"
	cfg.Retry = raptest.FastRetry(5)
	cfg.Logger = raptest.QuietLogger()
	cfg.CallTimeout = raptest.Timeout
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rig, raptest.StartServer(t, p), p
}

// exercise calls three tools of the MCP reference server through the
// proxy, each under its own name, checking what reaches the runtime's queue.
func exercise(t *testing.T, rig *raptest.Rig, base, thread string) {
	t.Helper()
	call := func(id, tool, args string) runtime.Message {
		t.Helper()
		if err := rig.Invoke(t, base, thread, id, tool, args); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		m := rig.Next(t)
		if m.Kind != runtime.KindToolResult || m.ToolCallID != id || m.ThreadID != thread {
			t.Fatalf("%s: message %+v", tool, m)
		}
		return m
	}
	if got := text(call("call_echo", "everything__echo", `{"message":"hello over RAP"}`)); got != "Echo: hello over RAP" {
		t.Fatalf("echo: %q", got)
	}
	if got := text(call("call_sum", "everything__get-sum", `{"a":2,"b":40}`)); !strings.Contains(got, "42") {
		t.Fatalf("get-sum: %q", got)
	}
	checkPNG(t, call("call_img", "everything__get-tiny-image", `{}`))
	// The runtime validates the arguments against the MCP tool's schema.
	if err := rig.Invoke(t, base, thread, "call_badargs", "everything__get-sum", `{"a":"two","b":1}`); err == nil || !strings.Contains(err.Error(), "a") {
		t.Fatalf("bad MCP arguments: %v, want a schema error", err)
	}
}

func text(m runtime.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		b.WriteString(c.Text)
	}
	return b.String() + m.Text
}

func checkPNG(t *testing.T, img runtime.Message) {
	t.Helper()
	found := false
	for _, c := range img.Content {
		if c.Type == "image" {
			b, err := base64.StdEncoding.DecodeString(c.Data)
			found = err == nil && c.MediaType == "image/png" && len(b) > 8 && string(b[1:4]) == "PNG"
		}
	}
	if !found {
		t.Fatalf("get-tiny-image: no PNG image in %+v", img.Content)
	}
}

// TestProxyMetaTools: with MetaTools the server is offered as
// everything_list_tools and everything_invoke_tool.
func TestProxyMetaTools(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	rig, base := startProxy(t, Config{Command: []string{"node", server, "stdio"}, MetaTools: true})
	const thread = "thr_meta"
	call := func(id, tool, args string) runtime.Message {
		t.Helper()
		if err := rig.Invoke(t, base, thread, id, tool, args); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return rig.Next(t)
	}
	list := call("call_list", "everything_list_tools", `{}`)
	for _, want := range []string{`"name":"echo"`, `"name":"get-sum"`, `"inputSchema":{`} {
		if !strings.Contains(text(list), want) {
			t.Fatalf("list_tools result lacks %s:\n%.2000s", want, text(list))
		}
	}
	if got := text(call("call_echo", "everything_invoke_tool", `{"tool_name":"echo","arguments":{"message":"hello over RAP"}}`)); got != "Echo: hello over RAP" {
		t.Fatalf("echo: %q", got)
	}
	checkPNG(t, call("call_img", "everything_invoke_tool", `{"tool_name":"get-tiny-image"}`))
	if got := text(call("call_bad", "everything_invoke_tool", `{"tool_name":"no-such-tool"}`)); !strings.HasPrefix(got, "error:") {
		t.Fatalf("unknown MCP tool: %q, want an error result", got)
	}
	if got := text(call("call_badargs", "everything_invoke_tool", `{"tool_name":"get-sum","arguments":{"a":"two"}}`)); !strings.HasPrefix(got, "error:") {
		t.Fatalf("bad MCP arguments: %q, want an error result", got)
	}
	if err := rig.Invoke(t, base, thread, "call_x", "everything_invoke_tool", `{"arguments":{}}`); err == nil || !strings.Contains(err.Error(), "tool_name") {
		t.Fatalf("missing tool_name: %v, want a schema error", err)
	}
}

func TestProxyStdio(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	rig, base := startProxy(t, Config{Command: []string{"node", server, "stdio"}})
	exercise(t, rig, base, "thr_stdio")
}

func TestProxyStreamableHTTP(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	port := freePort(t)
	cmd := exec.Command("node", server, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	ready := make(chan struct{})
	go func() { // owned by the test: ends when the server's stderr closes
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "listening on port") {
				close(ready)
				signalled = true
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case <-ready:
	case <-exited:
		t.Fatal("the MCP server exited before listening")
	case <-time.After(raptest.Timeout):
		t.Fatal("the MCP server did not start listening")
	}
	rig, base := startProxy(t, Config{URL: "http://127.0.0.1:" + port + "/mcp"})
	exercise(t, rig, base, "thr_http")
}

// TestProxyReconnects: when the MCP session drops (the subprocess is gone),
// the next call connects again instead of failing for good.
func TestProxyReconnects(t *testing.T) {
	t.Parallel()
	server := everythingServer(t)
	rig, base, p := startProxyP(t, Config{Command: []string{"node", server, "stdio"}})
	echo := func(call string) string {
		if err := rig.Invoke(t, base, "thr_re", call, "everything__echo", `{"message":"`+call+`"}`); err != nil {
			t.Fatal(err)
		}
		m := rig.Next(t)
		if len(m.Content) == 0 {
			return m.Text
		}
		return m.Content[0].Text
	}
	if got := echo("one"); got != "Echo: one" {
		t.Fatalf("first call: %q", got)
	}
	p.mu.Lock()
	first := p.session
	p.mu.Unlock()
	if err := first.Close(); err != nil { // ends the subprocess
		t.Logf("closing the session: %v", err)
	}
	if got := echo("two"); got != "Echo: two" {
		t.Fatalf("after the session dropped: %q", got)
	}
	p.mu.Lock()
	second := p.session
	p.mu.Unlock()
	if second == first || second == nil {
		t.Fatal("the proxy did not reconnect")
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Name: "", Command: []string{"x"}},
		{Name: "bad name", Command: []string{"x"}},
		{Name: "ok"},
		{Name: "ok", Command: []string{"x"}, URL: "http://x"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestConvert(t *testing.T) {
	t.Parallel()
	res := &sdk.CallToolResult{IsError: true, Content: []sdk.Content{
		&sdk.TextContent{Text: "boom"},
		&sdk.ImageContent{Data: []byte("\x89PNG"), MIMEType: "image/png"},
		&sdk.AudioContent{Data: []byte("abc"), MIMEType: "audio/wav"},
		&sdk.ResourceLink{URI: "file:///a", Name: "a"},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b", MIMEType: "text/plain", Text: "bee"}},
	}}
	got := Convert(res)
	want := []string{"text:error: the MCP tool reported an error:", "text:boom", "image:", "text:[audio of type audio/wav, 3 bytes, omitted]",
		"text:resource link: file:///a (a) ", "text:resource file:///b (text/plain):\nbee"}
	if len(got) != len(want) {
		t.Fatalf("got %d items: %+v", len(got), got)
	}
	for i, c := range got {
		if s := c.Type + ":" + c.Text; s != want[i] {
			t.Errorf("item %d = %q, want %q", i, s, want[i])
		}
	}
	if got[2].Data != base64.StdEncoding.EncodeToString([]byte("\x89PNG")) {
		t.Errorf("image data %q", got[2].Data)
	}
	if s := Convert(&sdk.CallToolResult{StructuredContent: map[string]int{"n": 1}}); len(s) != 1 || s[0].Text != `{"n":1}` {
		t.Errorf("structured only: %+v", s)
	}
}
