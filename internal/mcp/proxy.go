// Package mcp exposes an MCP server as a RAP toolset. The MCP server is
// reached over stdio (a subprocess) or Streamable HTTP through the official
// Go MCP SDK; the proxy is a RAP tool server (built with the rap kit) that
// offers two tools:
//
//   - {name}_list_tools: lists the MCP server's tools with their input
//     schemas;
//   - {name}_invoke_tool: calls one of them ({"tool_name", "arguments"}).
//
// The proxy acknowledges each invocation at once, calls the MCP server, and
// POSTs the result to the invocation's callback URL (text and image content
// pass through; other MCP content is described in text).
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

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentslice/agentslice/internal/procenv"
	"github.com/agentslice/agentslice/internal/rap"
)

// Config configures a Proxy. Name and exactly one of Command and URL are
// required.
type Config struct {
	// Name prefixes the two tools: {Name}_list_tools, {Name}_invoke_tool.
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

	mu      sync.Mutex // guards session; held while connecting
	session *sdk.ClientSession
	stopped bool
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
	p := &Proxy{cfg: cfg}
	p.client = sdk.NewClient(&sdk.Implementation{Name: "agentslice-mcp-proxy", Version: "1"}, nil)
	desc := cfg.Description
	if desc == "" {
		desc = "MCP server " + cfg.Name
	}
	kit, err := rap.NewServer(rap.ServerConfig{
		Name:        cfg.Name, // what agents' tools allow-lists name
		Description: desc,
		PublicURL:   cfg.PublicURL,
		Client:      cfg.Client,
		Retry:       cfg.Retry,
		Logger:      cfg.Logger,
		Tools: []rap.Tool{
			{
				Name:        ListToolsName(cfg.Name),
				Description: fmt.Sprintf("Lists the tools of the MCP server %q with their descriptions and input schemas. Call %s_invoke_tool to use one.", cfg.Name, cfg.Name),
				InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
				Annotations: &rap.Annotations{ReadOnly: true, Idempotent: true},
				Run:         p.listTools,
			},
			{
				Name:        InvokeToolName(cfg.Name),
				Description: fmt.Sprintf("Calls a tool of the MCP server %q (see %s_list_tools) with arguments matching its input schema.", cfg.Name, cfg.Name),
				InputSchema: json.RawMessage(`{
					"type": "object",
					"properties": {
						"tool_name": {"type": "string", "minLength": 1, "description": "the MCP tool to call"},
						"arguments": {"type": "object", "description": "its arguments"}
					},
					"required": ["tool_name"],
					"additionalProperties": false
				}`),
				Run: p.invokeTool,
			},
		},
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
// closes the MCP session (ending the subprocess). Safe to call twice.
func (p *Proxy) Stop() {
	p.kit.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.session != nil {
		if err := p.session.Close(); err != nil {
			p.cfg.Logger.Debug("mcp: closing session", "proxy", p.cfg.Name, "error", err)
		}
		p.session = nil
	}
}

// ServeHTTP serves the RAP side (toolset, invocations, notifications).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.kit.ServeHTTP(w, r) }

// connect returns the live session, connecting first if needed.
func (p *Proxy) connect(ctx context.Context) (*sdk.ClientSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil, errors.New("proxy stopped")
	}
	if p.session != nil {
		return p.session, nil
	}
	var t sdk.Transport
	if len(p.cfg.Command) > 0 {
		cmd := exec.Command(p.cfg.Command[0], p.cfg.Command[1:]...)
		cmd.Env, cmd.Dir = p.env(), p.cfg.Dir
		t = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	} else {
		t = &sdk.StreamableClientTransport{Endpoint: p.cfg.URL, HTTPClient: p.cfg.HTTPClient, DisableStandaloneSSE: true}
	}
	// The session outlives this call: connect without the call's
	// cancellation, bounded by the call timeout.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.CallTimeout)
	defer cancel()
	s, err := p.client.Connect(cctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to MCP server %s: %w", p.cfg.Name, err)
	}
	p.session = s
	return s, nil
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
		p.session = nil
		_ = s.Close()
	}
}

// withSession runs f on the session, reconnecting once if the connection
// was lost.
func (p *Proxy) withSession(ctx context.Context, f func(ctx context.Context, s *sdk.ClientSession) error) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.CallTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		s, err := p.connect(ctx)
		if err != nil {
			return err
		}
		err = f(ctx, s)
		if err == nil || attempt > 0 || ctx.Err() != nil || !errors.Is(err, sdk.ErrConnectionClosed) {
			return err
		}
		p.cfg.Logger.Warn("mcp: session lost; reconnecting", "proxy", p.cfg.Name, "error", err)
		p.drop(s)
	}
}

type toolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

func (p *Proxy) listTools(ctx context.Context, c *rap.Call) error {
	var tools []toolInfo
	err := p.withSession(ctx, func(ctx context.Context, s *sdk.ClientSession) error {
		tools = tools[:0]
		for tool, err := range s.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			schema, _ := json.Marshal(tool.InputSchema)
			tools = append(tools, toolInfo{Name: tool.Name, Description: tool.Description, InputSchema: schema})
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.Result(ctx, fmt.Sprintf("error: listing the tools of MCP server %s: %v", p.cfg.Name, err))
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return err
	}
	return c.Result(ctx, fmt.Sprintf("The MCP server %s has %d tools (JSON; call %s_invoke_tool with tool_name and arguments):\n%s",
		p.cfg.Name, len(tools), p.cfg.Name, b))
}

func (p *Proxy) invokeTool(ctx context.Context, c *rap.Call) error {
	var a struct {
		ToolName  string         `json:"tool_name"`
		Arguments map[string]any `json:"arguments"`
	}
	if err := c.Args(&a); err != nil {
		return err
	}
	if a.Arguments == nil {
		a.Arguments = map[string]any{}
	}
	var res *sdk.CallToolResult
	err := p.withSession(ctx, func(ctx context.Context, s *sdk.ClientSession) error {
		var err error
		res, err = s.CallTool(ctx, &sdk.CallToolParams{Name: a.ToolName, Arguments: a.Arguments})
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return c.Result(ctx, fmt.Sprintf("error: calling MCP tool %q on %s: %v", a.ToolName, p.cfg.Name, err))
	}
	return c.ResultContent(ctx, Convert(res))
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

// ListToolsName is the name of the tool that lists the tools of the MCP
// server configured as server.
func ListToolsName(server string) string { return server + "_list_tools" }

// InvokeToolName is the name of the tool that calls a tool of the MCP
// server configured as server.
func InvokeToolName(server string) string { return server + "_invoke_tool" }
