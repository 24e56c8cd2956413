package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentslice/agentslice/internal/rap"
)

// toolsChanged records that the MCP server's tool list may have changed
// (notifications/tools/list_changed): the next toolset fetch reads it again.
// It is logged at info level once a list was offered (a server that
// registers its tools just after connecting is not news).
func (p *Proxy) toolsChanged(why string) {
	p.tmu.Lock()
	offered := p.listed != 0
	p.tmu.Unlock()
	level := slog.LevelDebug
	if offered {
		level = slog.LevelInfo
	}
	p.cfg.Logger.Log(context.Background(), level, "mcp: tool list changed; new root threads get the new list", "proxy", p.cfg.Name, "reason", why)
	p.bump()
}

// bump marks the kit's tool list as out of date.
func (p *Proxy) bump() {
	p.tmu.Lock()
	defer p.tmu.Unlock()
	p.gen++
	close(p.changed)
	p.changed = make(chan struct{})
}

// changes returns a channel closed the next time the tool list is marked
// out of date.
func (p *Proxy) changes() <-chan struct{} {
	p.tmu.Lock()
	defer p.tmu.Unlock()
	return p.changed
}

// refreshTools makes the kit offer the MCP server's current tools, reading
// them unless the list read last is still current. When reading fails, an
// earlier list is kept (its calls will report the failure); without one the
// error is returned.
func (p *Proxy) refreshTools(ctx context.Context) error {
	p.tmu.Lock()
	current := p.listed != 0 && p.listed == p.gen
	had := p.listed != 0
	p.tmu.Unlock()
	if current {
		return nil
	}
	var tools []*sdk.Tool
	var gen uint64
	err := p.withSession(ctx, func(ctx context.Context, s *sdk.ClientSession) error {
		p.tmu.Lock()
		gen = p.gen // after connecting: a list_changed from here on is not lost
		p.tmu.Unlock()
		tools = tools[:0]
		for t, err := range s.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			tools = append(tools, t)
		}
		return nil
	})
	if err == nil {
		list := p.kitTools(tools)
		if len(list) == 0 {
			err = fmt.Errorf("MCP server %s offers no usable tools (it listed %d)", p.cfg.Name, len(tools))
		} else if err = p.kit.SetTools(list); err == nil {
			p.tmu.Lock()
			p.listed = max(p.listed, gen)
			p.tmu.Unlock()
			return nil
		}
	}
	if had {
		p.cfg.Logger.Warn("mcp: reading the tool list failed; offering the last one read", "proxy", p.cfg.Name, "error", err)
		return nil
	}
	return fmt.Errorf("mcp: proxy %s: reading the tool list: %w", p.cfg.Name, err)
}

// kitTools turns the MCP server's tools into the kit's, one each, named by
// ToolName. A tool whose input schema does not compile, or whose name
// collides with an earlier one's after shortening, is left out and logged.
func (p *Proxy) kitTools(tools []*sdk.Tool) []rap.Tool {
	out := make([]rap.Tool, 0, len(tools))
	seen := map[string]string{}
	for _, t := range tools {
		name := ToolName(p.cfg.Name, t.Name)
		if other, dup := seen[name]; dup {
			p.cfg.Logger.Warn("mcp: tool left out: its name collides with another's", "proxy", p.cfg.Name, "tool", t.Name, "other", other, "name", name)
			continue
		}
		schema := json.RawMessage(`{"type":"object"}`)
		if t.InputSchema != nil {
			b, err := json.Marshal(t.InputSchema)
			if err != nil {
				p.cfg.Logger.Warn("mcp: tool left out: its input schema cannot be encoded", "proxy", p.cfg.Name, "tool", t.Name, "error", err)
				continue
			}
			schema = b
		}
		if _, err := rap.CompileSchema(schema); err != nil {
			p.cfg.Logger.Warn("mcp: tool left out: its input schema is invalid", "proxy", p.cfg.Name, "tool", t.Name, "error", err)
			continue
		}
		seen[name] = t.Name
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		if desc == "" {
			desc = fmt.Sprintf("The tool %q of the MCP server %s.", t.Name, p.cfg.Name)
		}
		out = append(out, rap.Tool{Name: name, Description: desc, InputSchema: schema, Annotations: annotations(t.Annotations), Run: p.runTool(t.Name)})
	}
	return out
}

// annotations carries over the hints an MCP server set explicitly.
func annotations(a *sdk.ToolAnnotations) *rap.Annotations {
	if a == nil || (!a.ReadOnlyHint && !a.IdempotentHint && (a.DestructiveHint == nil || !*a.DestructiveHint)) {
		return nil
	}
	return &rap.Annotations{ReadOnly: a.ReadOnlyHint, Idempotent: a.IdempotentHint, Destructive: a.DestructiveHint != nil && *a.DestructiveHint}
}

// runTool is the kit's Run for the MCP tool named tool: the arguments were
// validated against its schema by the runtime and the kit.
func (p *Proxy) runTool(tool string) func(ctx context.Context, c *rap.Call) error {
	return func(ctx context.Context, c *rap.Call) error {
		var args map[string]any
		if err := c.Args(&args); err != nil {
			return err
		}
		return p.call(ctx, c, tool, args)
	}
}

// call calls the MCP tool and sends its result, or the failure as an error
// result.
func (p *Proxy) call(ctx context.Context, c *rap.Call, tool string, args map[string]any) error {
	if args == nil {
		args = map[string]any{}
	}
	var res *sdk.CallToolResult
	err := p.withSession(ctx, func(ctx context.Context, s *sdk.ClientSession) error {
		var err error
		res, err = s.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, sdk.ErrConnectionClosed) {
			p.cfg.Logger.Warn("mcp: server connection lost during a call", "proxy", p.cfg.Name, "tool", tool, "error", err)
		}
		return c.Result(ctx, fmt.Sprintf("error: calling MCP tool %q on %s: %v", tool, p.cfg.Name, err))
	}
	return c.ResultContent(ctx, Convert(res))
}
