// Package mcp exposes an MCP server as a RAP toolset. The MCP server is
// reached over stdio (a subprocess) or Streamable HTTP through the official
// Go MCP SDK; the proxy is a RAP tool server (built with the rap kit) whose
// toolset lists the MCP server's own tools: each under the name
// ToolName(server, tool) ("{server}__{tool}", shortened with a hash suffix
// when it would exceed the providers' 64 characters or has characters they
// refuse) with its own input schema, which the runtime and the kit
// validate arguments against like any RAP tool's. A tool whose schema does
// not compile is left out (and logged), not the whole server.
//
// With Config.MetaTools the proxy offers two meta-tools instead (for a
// server with so many tools that their schemas would crowd the model's
// context):
//
//   - {name}_list_tools: lists the MCP server's tools with their input
//     schemas;
//   - {name}_invoke_tool: calls one of them ({"tool_name", "arguments"}).
//
// The toolset is read from the MCP server when the runtime fetches it
// (GET /.well-known/rap-toolset) and kept until the server sends
// notifications/tools/list_changed or the session is replaced; the next
// fetch reads it again. The runtime fetches a toolset once per root thread,
// so a new root thread sees a changed list, and a running one keeps the
// tools it started with (a call to a tool that is gone gets an error
// result naming the tools there are) unless its toolset missed a server and
// is fetched again. When the MCP server cannot be reached
// and no list was read before, the toolset is answered 503 with the reason
// (the runtime leaves the server out and fetches again with backoff); a
// failure to connect is answered again for 5 seconds before the server is
// started anew.
//
// The proxy acknowledges each invocation at once, calls the MCP server, and
// POSTs the result to the invocation's callback URL (text and image content
// pass through; other MCP content is described in text).
//
// A stdio server's stderr is logged line by line ("mcp: server stderr",
// with the proxy's name); its last lines (at most 20, 4 KiB) are added to
// the error of a session that fails to start or dies, so the model and the
// log say why instead of "connection closed".
//
// The package owns the MCP session (connected on first use, reconnected once
// when it drops) and the subprocess, which gets an allow-listed environment
// (package procenv), never the runtime's secrets. It must not know about the runtime's
// stores or engine: it speaks RAP on one side and MCP on the other.
package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentslice/agentslice/internal/procenv"
	"github.com/agentslice/agentslice/internal/rap"
)

// Config configures a Proxy. Name and exactly one of Command and URL are
// required.
type Config struct {
	// Name is the toolset's name and prefixes its tools (ToolPrefix).
	// 1..100 characters of [A-Za-z0-9_-].
	Name string
	// Description of the MCP server, shown in the toolset.
	Description string

	// Command runs the MCP server as a subprocess speaking stdio (argv).
	Command []string
	// Env is the subprocess's environment (KEY=VALUE); nil gives it
	// procenv.DefaultPass of this process's environment. Either way no
	// AGENTSLICE_* variable reaches it (see package procenv).
	Env []string
	Dir string

	// URL is a Streamable HTTP MCP endpoint.
	URL        string
	HTTPClient *http.Client

	// CallTimeout bounds one MCP request. Default 5 minutes.
	CallTimeout time.Duration

	// MetaTools offers {Name}_list_tools and {Name}_invoke_tool instead of
	// one tool per MCP tool.
	MetaTools bool

	// The RAP side (see rap.ServerConfig).
	PublicURL string
	Client    *http.Client
	Retry     rap.RetryPolicy
	Logger    *slog.Logger
}

// Proxy is an MCP server exposed as a RAP tool server: an http.Handler with
// Start/Stop.
type Proxy struct {
	cfg    Config
	client *sdk.Client
	kit    *rap.Server

	mu      sync.Mutex // guards session and stderr; held while connecting
	session *sdk.ClientSession
	stderr  *stderrLog // of the session's subprocess; nil over HTTP
	stopped bool
	// failErr is the last failure to connect, answered again until
	// failedAt+connectRetryAfter instead of starting the server again.
	failErr    error
	failedAt   time.Time
	retryAfter time.Duration // connectRetryAfter; tests lengthen it

	tmu     sync.Mutex    // guards the tool list's state below
	gen     uint64        // bumped when the MCP server's tool list may have changed
	listed  uint64        // gen of the list the kit offers; 0: none read yet
	changed chan struct{} // closed (and replaced) when gen is bumped

	rmu     sync.Mutex // guards pipes
	pipes   map[*os.File]struct{}
	readers sync.WaitGroup // the stderr readers
}

// New checks cfg and builds a Proxy. Nothing is started or connected yet.
func New(cfg Config) (*Proxy, error) {
	if cfg.Name == "" || len(cfg.Name) > 100 || strings.Trim(cfg.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
		return nil, fmt.Errorf("mcp: Config.Name %q must be 1..100 characters of [A-Za-z0-9_-]", cfg.Name)
	}
	if (len(cfg.Command) == 0) == (cfg.URL == "") {
		return nil, fmt.Errorf("mcp: proxy %s: set exactly one of Config.Command (stdio) and Config.URL (Streamable HTTP)", cfg.Name)
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 5 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Proxy{cfg: cfg, retryAfter: connectRetryAfter, gen: 1, changed: make(chan struct{}), pipes: map[*os.File]struct{}{}}
	p.client = sdk.NewClient(&sdk.Implementation{Name: "agentslice-mcp-proxy", Version: "1"},
		&sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { p.toolsChanged("the MCP server changed its tools") }})
	desc := cfg.Description
	if desc == "" {
		desc = "MCP server " + cfg.Name
	}
	var list []rap.Tool // first-class tools: set from the MCP server's list (refreshTools)
	if cfg.MetaTools {
		list = p.metaTools()
	}
	kit, err := rap.NewServer(rap.ServerConfig{
		Name:        cfg.Name, // what agents' tools allow-lists name
		Description: desc,
		PublicURL:   cfg.PublicURL,
		Client:      cfg.Client,
		Retry:       cfg.Retry,
		Logger:      cfg.Logger,
		Tools:       list,
	})
	if err != nil {
		return nil, fmt.Errorf("mcp: proxy %s: %w", cfg.Name, err)
	}
	p.kit = kit
	return p, nil
}

// Start starts the RAP side. The MCP server is connected on first use.
func (p *Proxy) Start(ctx context.Context) error { return p.kit.Start(ctx) }

// Stop stops taking calls, cancels and waits for the running ones, then
// closes the MCP session (ending the subprocess) and waits for its stderr
// to be read. Safe to call twice.
func (p *Proxy) Stop() {
	p.kit.Stop()
	p.mu.Lock()
	p.stopped = true
	if p.session != nil {
		if err := p.session.Close(); err != nil {
			p.cfg.Logger.Debug("mcp: closing session", "proxy", p.cfg.Name, "error", err)
		}
		p.session, p.stderr = nil, nil
	}
	p.mu.Unlock()
	p.stopReaders()
}

// ServeHTTP serves the RAP side (toolset, invocations, notifications).
// Before the toolset is served, the MCP server's tool list is read if it
// was not yet, or changed since; when that fails and there is no earlier
// list, the toolset is answered 503 with the reason.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.cfg.MetaTools && strings.HasSuffix(r.URL.Path, rap.ToolsetPath) && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		if err := p.refreshTools(r.Context()); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			b, _ := json.Marshal(map[string]string{"error": err.Error()})
			_, _ = w.Write(append(b, '\n'))
			return
		}
	}
	p.kit.ServeHTTP(w, r)
}

// connectRetryAfter is how long a failure to connect is answered again
// before the server is started (or dialled) anew: the runtime's toolset
// fetches (retried, and one per new root thread) would otherwise each start
// a server that cannot start.
const connectRetryAfter = 5 * time.Second

// connect returns the live session and its subprocess's stderr (nil over
// HTTP), connecting first if needed. A failure to connect carries the
// server's last stderr lines.
func (p *Proxy) connect(ctx context.Context) (*sdk.ClientSession, *stderrLog, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil, nil, errors.New("proxy stopped")
	}
	if p.session != nil {
		return p.session, p.stderr, nil
	}
	if p.failErr != nil && time.Since(p.failedAt) < p.retryAfter {
		return nil, nil, p.failErr
	}
	var t sdk.Transport
	if len(p.cfg.Command) > 0 {
		cmd := exec.Command(p.cfg.Command[0], p.cfg.Command[1:]...)
		cmd.Env, cmd.Dir = p.env(), p.cfg.Dir
		t = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	} else {
		t = &sdk.StreamableClientTransport{Endpoint: p.cfg.URL, HTTPClient: p.cfg.HTTPClient} // with the standalone SSE stream: list_changed
	}
	var stderr *stderrLog
	started := func() {}
	if ct, ok := t.(*sdk.CommandTransport); ok {
		var err error
		if stderr, started, err = p.stderrPipe(ct.Command); err != nil {
			return nil, nil, err
		}
	}
	// The session outlives this call: connect without the call's
	// cancellation, bounded by the call timeout.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.CallTimeout)
	defer cancel()
	s, err := p.client.Connect(cctx, t, nil)
	started()
	if err != nil {
		p.failErr, p.failedAt = stderr.explain(fmt.Errorf("connecting to MCP server %s: %w", p.cfg.Name, err)), time.Now()
		return nil, nil, p.failErr
	}
	p.session, p.stderr, p.failErr = s, stderr, nil
	p.bump() // a new session (a new process, perhaps): read its tool list again
	return s, stderr, nil
}

// env is the subprocess's environment: never the whole of this process's.
func (p *Proxy) env() []string {
	if p.cfg.Env == nil {
		return procenv.Build(os.Environ(), nil, nil)
	}
	return procenv.Build(nil, nil, p.cfg.Env)
}

// drop forgets a session that failed, so the next call reconnects.
func (p *Proxy) drop(s *sdk.ClientSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.session == s {
		p.session, p.stderr = nil, nil
		_ = s.Close()
	}
}

// withSession runs f on the session, reconnecting once if the connection
// was closed. Any failure that is not the MCP server's own answer (a
// JSON-RPC error) drops the session, so the next call starts afresh, and
// carries the server's last stderr lines.
func (p *Proxy) withSession(ctx context.Context, f func(ctx context.Context, s *sdk.ClientSession) error) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		s, stderr, err := p.connect(ctx)
		if err != nil {
			return err
		}
		err = f(ctx, s)
		var answer *jsonrpc.Error
		if err == nil || ctx.Err() != nil || errors.As(err, &answer) {
			return err
		}
		p.drop(s)
		if attempt > 0 || !errors.Is(err, sdk.ErrConnectionClosed) {
			return stderr.explain(err)
		}
		p.cfg.Logger.Warn("mcp: session lost; reconnecting", "proxy", p.cfg.Name, "error", err)
	}
}

// Convert turns an MCP tool result into RAP content items: text and images
// pass through; audio, resources and links are described in text; a result
// with only structured content gets it as JSON text. An MCP error result is
// marked by a leading "error:" text item.
func Convert(res *sdk.CallToolResult) []rap.ContentItem {
	var out []rap.ContentItem
	if res.IsError {
		out = append(out, rap.ContentItem{Type: "text", Text: "error: the MCP tool reported an error:"})
	}
	for _, c := range res.Content {
		switch v := c.(type) {
		case *sdk.TextContent:
			out = append(out, rap.ContentItem{Type: "text", Text: v.Text})
		case *sdk.ImageContent:
			if len(v.Data) > 0 && strings.HasPrefix(v.MIMEType, "image/") {
				out = append(out, rap.ContentItem{Type: "image", Data: base64.StdEncoding.EncodeToString(v.Data), MediaType: v.MIMEType})
			} else {
				out = append(out, rap.ContentItem{Type: "text", Text: fmt.Sprintf("[image of type %q omitted]", v.MIMEType)})
			}
		case *sdk.AudioContent:
			out = append(out, rap.ContentItem{Type: "text", Text: fmt.Sprintf("[audio of type %s, %d bytes, omitted]", v.MIMEType, len(v.Data))})
		case *sdk.ResourceLink:
			out = append(out, rap.ContentItem{Type: "text", Text: fmt.Sprintf("resource link: %s (%s) %s", v.URI, v.Name, v.Description)})
		case *sdk.EmbeddedResource:
			out = append(out, rap.ContentItem{Type: "text", Text: describeResource(v.Resource)})
		default:
			b, _ := json.Marshal(c)
			out = append(out, rap.ContentItem{Type: "text", Text: string(b)})
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		out = append(out, rap.ContentItem{Type: "text", Text: string(b)})
	}
	if len(out) == 0 {
		out = append(out, rap.ContentItem{Type: "text", Text: "(the MCP tool returned no content)"})
	}
	return out
}

func describeResource(r *sdk.ResourceContents) string {
	if r == nil {
		return "[empty resource]"
	}
	if r.Text != "" {
		return fmt.Sprintf("resource %s (%s):\n%s", r.URI, r.MIMEType, r.Text)
	}
	return fmt.Sprintf("[binary resource %s (%s), %d bytes, omitted]", r.URI, r.MIMEType, len(r.Blob))
}
