package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentslice/agentslice/internal/rap"
)

// metaTools are the two tools offered with Config.MetaTools.
func (p *Proxy) metaTools() []rap.Tool {
	name := p.cfg.Name
	return []rap.Tool{
		{
			Name:        ListToolsName(name),
			Description: fmt.Sprintf("Lists the tools of the MCP server %q with their descriptions and input schemas. Call %s to use one.", name, InvokeToolName(name)),
			InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
			Annotations: &rap.Annotations{ReadOnly: true, Idempotent: true},
			Run:         p.listTools,
		},
		{
			Name:        InvokeToolName(name),
			Description: fmt.Sprintf("Calls a tool of the MCP server %q (see %s) with arguments matching its input schema.", name, ListToolsName(name)),
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
	return p.call(ctx, c, a.ToolName, a.Arguments)
}

// ListToolsName is the name of the meta-tool (Config.MetaTools) that lists
// the tools of the MCP server configured as server.
func ListToolsName(server string) string { return server + "_list_tools" }

// InvokeToolName is the name of the meta-tool (Config.MetaTools) that calls
// a tool of the MCP server configured as server.
func InvokeToolName(server string) string { return server + "_invoke_tool" }
