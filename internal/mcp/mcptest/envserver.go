// Package mcptest holds a real stdio MCP server for tests: the test binary
// itself, started again with EnvServerCommand, serving one tool
// ("environment") that reports the process's environment as its result.
// It exists to prove what a tool process can see (package procenv).
//
// A test package that uses it calls RunHelper first thing in its TestMain.
package mcptest

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// helperArg marks a process started by EnvServerCommand.
const helperArg = "agentslice-mcptest-env-server"

// EnvToolName is the env server's one tool.
const EnvToolName = "environment"

// EnvServerCommand is the argv of the env server: this test binary.
func EnvServerCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("mcptest: finding the test binary: %w", err)
	}
	return []string{exe, helperArg}, nil
}

// RunHelper serves the env server over stdio and exits when this process
// was started by EnvServerCommand; otherwise it returns at once.
func RunHelper() {
	if len(os.Args) < 2 || os.Args[1] != helperArg {
		return
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest-env", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: EnvToolName, Description: "Reports this server's environment, one KEY=VALUE a line."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			env := os.Environ()
			sort.Strings(env)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Join(env, "\n")}}}, nil, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest env server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
