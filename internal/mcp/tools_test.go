package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
)

// providerName is what Amazon Bedrock and OpenAI accept as a tool name.
var providerName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	t.Parallel()
	long40 := strings.Repeat("s", 40)
	for _, tc := range []struct {
		server, tool, want string
	}{
		{"everything", "echo", "everything__echo"},
		{"everything", "get-sum", "everything__get-sum"},
		{"fs", "files.read/v2", "fs__files_read_v2_" + shortHash("files.read/v2")},
		{"fs", "files_read_v2", "fs__files_read_v2"},
		{"fs", "", "fs___" + shortHash("")},
		{"fs", strings.Repeat("x", 60), "fs__" + strings.Repeat("x", 60)},
		{"fs", strings.Repeat("x", 61), "fs__" + strings.Repeat("x", 51) + "_" + shortHash(strings.Repeat("x", 61))},
		{long40, "echo", long40[:23] + "_" + shortHash(long40) + "__echo"},
	} {
		got := ToolName(tc.server, tc.tool)
		if got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
		if !providerName.MatchString(got) {
			t.Errorf("ToolName(%q, %q) = %q: not a name every provider accepts", tc.server, tc.tool, got)
		}
		if !strings.HasPrefix(got, ToolPrefix(tc.server)) {
			t.Errorf("ToolName(%q, %q) = %q lacks the prefix %q", tc.server, tc.tool, got, ToolPrefix(tc.server))
		}
	}
	// Names that shorten to the same text stay apart; the longest server
	// name leaves room for the tool.
	server := strings.Repeat("n", 100)
	a, b := ToolName(server, "a.b"+strings.Repeat("z", 80)), ToolName(server, "a/b"+strings.Repeat("z", 80))
	if a == b || len(a) != MaxToolNameLen || !providerName.MatchString(a) || !providerName.MatchString(b) {
		t.Fatalf("shortened names %q and %q", a, b)
	}
}

// syncBuffer is a log sink safe for the proxy's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startFixture starts a proxy named "fix" for the fixture MCP server in
// mode, and a loader for its toolset.
func startFixture(t *testing.T, mode string, logs io.Writer) (*raptest.Rig, string, *Proxy, *rap.Loader) {
	t.Helper()
	return startProxyFor(t, Config{Name: "fix", Command: fixture(t, mode)}, logs)
}

// startProxyFor starts a proxy for cfg and a loader for its toolset.
func startProxyFor(t *testing.T, cfg Config, logs io.Writer) (*raptest.Rig, string, *Proxy, *rap.Loader) {
	t.Helper()
	if logs == nil {
		logs = io.Discard
	}
	rig := raptest.NewRig(t)
	cfg.Retry, cfg.Logger, cfg.CallTimeout = raptest.FastRetry(5), slog.New(slog.NewTextHandler(logs, nil)), raptest.Timeout
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := raptest.StartServer(t, p)
	l, err := rap.NewLoader(rap.LoaderConfig{Servers: []string{base}, Dispatcher: rig.Dispatcher, Fetch: raptest.FastRetry(2), Logger: raptest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return rig, base, p, l
}

// call dispatches a tool of set and returns the text of its result.
func call(t *testing.T, rig *raptest.Rig, set *rap.Set, thread, id, tool, args string) string {
	t.Helper()
	e, ok := set.Lookup(tool)
	if !ok {
		t.Fatalf("tool %q is not offered; offered: %v", tool, specNames(set))
	}
	if err := e.Async.(runtime.ArgsValidator).ValidateArgs(args); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if err := e.Async.Dispatch(context.Background(), runtime.Invocation{ThreadID: thread, CallID: id, Name: tool, Args: args}); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	m := rig.Next(t)
	if m.Kind != runtime.KindToolResult || m.ToolCallID != id {
		t.Fatalf("%s: message %+v", tool, m)
	}
	var b strings.Builder
	b.WriteString(m.Text)
	for _, c := range m.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func specNames(set *rap.Set) []string {
	var names []string
	for _, s := range set.Specs() {
		names = append(names, s.Name)
	}
	return names
}

func loadSet(t *testing.T, l *rap.Loader, root string) *rap.Set {
	t.Helper()
	set, err := l.SetFor(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if p := set.Problems(); len(p) > 0 {
		t.Fatalf("toolset problems: %v", p)
	}
	return set
}

// TestProxyOffersMCPToolsByName: each MCP tool is a RAP tool of its own,
// named server__tool (shortened when a provider would refuse the name),
// with the MCP server's input schema, which the runtime validates.
func TestProxyOffersMCPToolsByName(t *testing.T) {
	t.Parallel()
	rig, _, _, l := startFixture(t, "serve", nil)
	set := loadSet(t, l, "thr_names")
	want := []string{"fix__crash", "fix__echo", "fix__grow", ToolName("fix", fixtureLong), ToolName("fix", fixtureDotted)}
	got := specNames(set)
	for _, w := range want {
		if !strings.Contains(strings.Join(got, " "), w) {
			t.Fatalf("offered %v, want %v", got, want)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("offered %v, want exactly %v", got, want)
	}
	for _, n := range got {
		if !providerName.MatchString(n) {
			t.Errorf("%q is not a name every provider accepts", n)
		}
	}
	e, _ := set.Lookup("fix__echo")
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(e.Spec.InputSchema, &schema); err != nil || schema.Type != "object" || schema.Properties["text"] == nil || len(schema.Required) != 1 || schema.Required[0] != "text" {
		t.Fatalf("fix__echo schema %s (%v), want the MCP server's", e.Spec.InputSchema, err)
	}
	if e.Spec.Description != "Echoes the text." {
		t.Errorf("description %q", e.Spec.Description)
	}
	v := e.Async.(runtime.ArgsValidator)
	for _, bad := range []string{`{}`, `{"text": 3}`} {
		if err := v.ValidateArgs(bad); err == nil || !strings.Contains(err.Error(), "text") {
			t.Errorf("arguments %s: %v, want a schema error naming text", bad, err)
		}
	}
	if got := call(t, rig, set, "thr_names", "call_echo", "fix__echo", `{"text":"hi"}`); got != "echo: hi" {
		t.Fatalf("fix__echo: %q", got)
	}
	if got := call(t, rig, set, "thr_names", "call_dot", ToolName("fix", fixtureDotted), `{"text":"x"}`); got != "dotted: x" {
		t.Fatalf("dotted tool: %q", got)
	}
	if got := call(t, rig, set, "thr_names", "call_long", ToolName("fix", fixtureLong), `{"text":"y"}`); got != "long: y" {
		t.Fatalf("long tool: %q", got)
	}
}

// TestProxyToolListChanged: after the MCP server sends
// notifications/tools/list_changed, a new root thread's toolset has the
// new tool and it can be called; a root thread that loaded its toolset
// before keeps the tools it had. Over stdio and over Streamable HTTP (where
// the notification comes on the standalone SSE stream).
func TestProxyToolListChanged(t *testing.T) {
	t.Parallel()
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		rig, _, p, l := startFixture(t, "serve", nil)
		checkListChanged(t, rig, p, l)
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		srv := newFixtureServer()
		hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
		t.Cleanup(hs.Close)
		rig, _, p, l := startProxyFor(t, Config{Name: "fix", URL: hs.URL}, nil)
		checkListChanged(t, rig, p, l)
	})
}

func checkListChanged(t *testing.T, rig *raptest.Rig, p *Proxy, l *rap.Loader) {
	t.Helper()
	before := loadSet(t, l, "thr_before")
	if _, ok := before.Lookup("fix__added"); ok {
		t.Fatal("fix__added offered before it was added")
	}
	changed := p.changes()
	if got := call(t, rig, before, "thr_before", "call_grow", "fix__grow", `{"name":"added"}`); got != "added added" {
		t.Fatalf("grow: %q", got)
	}
	select {
	case <-changed:
	case <-time.After(raptest.Timeout):
		t.Fatal("the proxy did not hear notifications/tools/list_changed")
	}
	after := loadSet(t, l, "thr_after")
	if got := call(t, rig, after, "thr_after", "call_added", "fix__added", `{"text":"z"}`); got != "added: z" {
		t.Fatalf("fix__added: %q", got)
	}
	if _, ok := loadSet(t, l, "thr_before").Lookup("fix__added"); ok {
		t.Fatal("a root thread's toolset changed under it")
	}
}

// TestProxyStderrWhenServerFailsToStart: a server that writes to stderr and
// exits before speaking MCP is reported with its last stderr lines (the
// last 20), at Check and in the toolset's 503; every line is logged with
// the proxy's name.
func TestProxyStderrWhenServerFailsToStart(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	_, base, p, _ := startFixture(t, "die", logs)
	p.retryAfter = time.Hour // the toolset fetch below must not start it again
	err := p.Check(context.Background())
	if err == nil {
		t.Fatal("Check passed for a server that exits at start")
	}
	msg := err.Error()
	for _, want := range []string{"connecting to MCP server fix", "Error: Cannot find module '/nowhere/server.js'", "step 29", "step 11\n"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("Check error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "step 10\n") {
		t.Fatalf("Check error keeps more than 20 lines:\n%s", msg)
	}
	resp, err := http.Get(base + rap.ToolsetPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "Cannot find module") {
		t.Fatalf("toolset: %d %s", resp.StatusCode, body)
	}
	p.Stop() // the stderr readers are done: every line is logged
	l := logs.String()
	if !strings.Contains(l, `msg="mcp: server stderr" proxy=fix line="Error: Cannot find module '/nowhere/server.js'"`) ||
		!strings.Contains(l, `line="fixture: starting, step 1"`) {
		t.Fatalf("log lacks the server's stderr lines:\n%s", l)
	}
	// The toolset fetch got the failure of Check's start, not a start of
	// its own (within retryAfter).
	if n := strings.Count(l, `line="fixture: starting, step 1"`); n != 1 {
		t.Fatalf("the server was started %d times, want once:\n%s", n, l)
	}
}

// TestProxyStderrWhenServerDies: a server that dies during a call: the
// error result the model gets carries its last stderr lines.
func TestProxyStderrWhenServerDies(t *testing.T) {
	t.Parallel()
	rig, _, _, l := startFixture(t, "serve", nil)
	set := loadSet(t, l, "thr_crash")
	got := call(t, rig, set, "thr_crash", "call_crash", "fix__crash", `{}`)
	if !strings.HasPrefix(got, "error: calling MCP tool \"crash\" on fix") || !strings.Contains(got, fixtureCrash) {
		t.Fatalf("crash result: %q", got)
	}
	// The next call starts the server again.
	if got := call(t, rig, set, "thr_crash", "call_echo", "fix__echo", `{"text":"back"}`); got != "echo: back" {
		t.Fatalf("after the crash: %q", got)
	}
}

func TestKitToolsLeavesOutBadSchemas(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	p, err := New(Config{Name: "fix", Command: []string{"x"}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tt := true
	list := p.kitTools([]*sdk.Tool{
		{Name: "good", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}},
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &tt}},
		{Name: "bad", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": 12}}}},
		{Name: "remote", InputSchema: map[string]any{"$ref": "https://example.test/schema.json"}},
		{Name: "noschema", Title: "No schema"},
	})
	var names []string
	for _, tl := range list {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "fix__good,fix__noschema" {
		t.Fatalf("kit tools %v", names)
	}
	if a := list[0].Annotations; a == nil || !a.ReadOnly || !a.Destructive || a.Idempotent {
		t.Errorf("annotations %+v", a)
	}
	if list[1].Description != "No schema" || string(list[1].InputSchema) != `{"type":"object"}` {
		t.Errorf("noschema: %+v", list[1])
	}
	if l := logs.String(); !strings.Contains(l, "tool=bad") || !strings.Contains(l, "tool=remote") {
		t.Fatalf("left-out tools not logged:\n%s", l)
	}
}

func TestStderrLogBounds(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	l := newStderrLog("fix", slog.New(slog.NewTextHandler(logs, nil)))
	long := strings.Repeat("é", stderrLineBytes) // 2 bytes a rune: cut mid-line
	for _, chunk := range []string{"one\r\ntw", "o\n", long, "tail of the long line\n"} {
		if n, err := l.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	for i := range 40 {
		_, _ = l.Write([]byte(strings.Repeat("x", 300) + string(rune('a'+i%26)) + "\n"))
	}
	_, _ = l.Write([]byte("no newline at the end"))
	l.end()
	tail := strings.Split(l.Tail(), "\n")
	if len(tail) > stderrTailLines || len(l.Tail()) > stderrTailBytes {
		t.Fatalf("tail of %d lines, %d bytes", len(tail), len(l.Tail()))
	}
	if tail[len(tail)-1] != "no newline at the end" {
		t.Fatalf("last line %q", tail[len(tail)-1])
	}
	out := logs.String()
	for _, want := range []string{`line=one`, `line=two`, "é…\n", `line="no newline at the end"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %s:\n%.600s", want, out)
		}
	}
	if strings.Contains(out, "tail of the long line") {
		t.Fatal("the rest of a cut line was kept")
	}
	if err := l.explain(io.EOF); err == nil || !strings.Contains(err.Error(), "no newline at the end") {
		t.Fatalf("explain: %v", err)
	}
}

// TestQuickStartPinsTheTestedServer: the README's MCP quick start installs
// its server from docs/examples/mcp alone; it must be the version the tests
// run (the repository root's package.json).
func TestQuickStartPinsTheTestedServer(t *testing.T) {
	t.Parallel()
	read := func(path string) map[string]string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var pkg struct {
			Dependencies    map[string]string `json:"dependencies"`
			DevDependencies map[string]string `json:"devDependencies"`
		}
		if err := json.Unmarshal(b, &pkg); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for k, v := range pkg.DevDependencies {
			if pkg.Dependencies == nil {
				pkg.Dependencies = map[string]string{}
			}
			pkg.Dependencies[k] = v
		}
		return pkg.Dependencies
	}
	const server = "@modelcontextprotocol/server-everything"
	quick, root := read("../../docs/examples/mcp/package.json"), read("../../package.json")
	if len(quick) != 1 || quick[server] == "" || quick[server] != root[server] {
		t.Fatalf("quick start pins %v; the tests run %s %s", quick, server, root[server])
	}
	lock, err := os.ReadFile("../../docs/examples/mcp/package-lock.json")
	if err != nil || !strings.Contains(string(lock), `"node_modules/`+server+`": {
      "version": "`+quick[server]+`"`) {
		t.Fatalf("docs/examples/mcp/package-lock.json does not lock %s %s (%v)", server, quick[server], err)
	}
}
