package server

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/procenv"
)

// ExampleTools selects the example tools served in-process.
type ExampleTools struct {
	GetTime    bool        `json:"get_time,omitempty"`
	RunCommand *RunCommand `json:"run_command,omitempty"`
}

// RunCommand configures the example run_command tool.
type RunCommand struct {
	// Allow lists the commands (argv[0] exactly) the tool may run; at
	// least one.
	Allow []string `json:"allow"`
	// Dir is the working directory of the commands. Default: the server's.
	Dir string `json:"dir,omitempty"`
	// Timeout kills a command that runs longer. Default 10m.
	Timeout string `json:"timeout,omitempty"`
}

// MCPServer is one MCP server to proxy: a subprocess speaking stdio
// (Command) or a Streamable HTTP endpoint (URL).
type MCPServer struct {
	// Name is the toolset's name (what agents' tools lists name) and
	// prefixes its tools: {name}__{tool} (see mcp.ToolName).
	Name    string   `json:"name"`
	Command []string `json:"command,omitempty"`
	URL     string   `json:"url,omitempty"`
	// Env are KEY=VALUE entries the subprocess gets besides the
	// variables pass_env lets through (an entry here wins); never an
	// AGENTSLICE_* variable.
	Env []string `json:"env,omitempty"`
	Dir string   `json:"dir,omitempty"`
	// MetaTools offers the server as two tools, {name}_list_tools and
	// {name}_invoke_tool, instead of one tool per MCP tool: for a server
	// with so many tools that their schemas would crowd the model's context.
	MetaTools bool `json:"meta_tools,omitempty"`
}

var mcpName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// resolveTools checks the tool servers, the example tools, the sandbox,
// pass_env and the MCP servers.
func (c *Config) resolveTools(s *settings) error {
	bad := configErr
	var err error
	for i, u := range c.ToolServers {
		if err := checkBaseURL(u); err != nil {
			return bad(fmt.Sprintf("tool_servers[%d]", i), "%v", err)
		}
	}
	if e := c.ExampleTools; e != nil && e.RunCommand != nil {
		rc := e.RunCommand
		if len(rc.Allow) == 0 {
			return bad("example_tools.run_command.allow", "empty: list the commands run_command may run")
		}
		for i, a := range rc.Allow {
			if strings.TrimSpace(a) == "" {
				return bad(fmt.Sprintf("example_tools.run_command.allow[%d]", i), "empty command")
			}
		}
		if s.commandTimeout, err = duration("example_tools.run_command.timeout", rc.Timeout, 10*time.Minute); err != nil {
			return err
		}
	}
	if err := c.resolveSandbox(s); err != nil {
		return err
	}
	for i, n := range c.PassEnv {
		if err := procenv.CheckName(n); err != nil {
			return bad(fmt.Sprintf("pass_env[%d]", i), "%v", err)
		}
	}
	names := map[string]bool{}
	for i, m := range c.MCPServers {
		f := fmt.Sprintf("mcp_servers[%d]", i)
		if !mcpName.MatchString(m.Name) {
			return bad(f+".name", "%q must be 1 to 100 characters of letters, digits, _ and -", m.Name)
		}
		if names[m.Name] {
			return bad(f+".name", "%q is used twice", m.Name)
		}
		names[m.Name] = true
		if (len(m.Command) == 0) == (m.URL == "") {
			return bad(f+".command", "set exactly one of command (a subprocess speaking stdio) and url (Streamable HTTP)")
		}
		if len(m.Command) > 0 && strings.TrimSpace(m.Command[0]) == "" {
			return bad(f+".command[0]", "empty program name")
		}
		for j, e := range m.Env {
			k, _, ok := strings.Cut(e, "=")
			if !ok || k == "" {
				return bad(fmt.Sprintf("%s.env[%d]", f, j), "%q is not KEY=VALUE", e)
			}
			if err := procenv.CheckName(k); err != nil {
				return bad(fmt.Sprintf("%s.env[%d]", f, j), "%v", err)
			}
		}
		if m.URL != "" {
			if err := checkBaseURL(m.URL); err != nil {
				return bad(f+".url", "%v", err)
			}
		}
	}
	return nil
}
