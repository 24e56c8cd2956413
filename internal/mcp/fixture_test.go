package mcp

import (
	"context"
	"fmt"
	"os"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentslice/agentslice/internal/mcp/mcptest"
)

// The fixture is a real MCP server built with the official Go SDK, run over
// stdio as a subprocess: the test binary itself, started with fixtureArg
// and a mode (TestMain runs it instead of the tests).
const fixtureArg = "agentslice-mcp-fixture"

// Names of the fixture's tools that the tests look for.
const (
	fixtureDotted = "files.read/v2"
	fixtureLong   = "a_tool_whose_name_is_far_too_long_for_any_model_provider_to_accept_it"
	fixtureCrash  = "fixture: crashing on purpose"
)

func TestMain(m *testing.M) {
	mcptest.RunHelper() // the env server, when this binary is started as one
	if len(os.Args) > 2 && os.Args[1] == fixtureArg {
		os.Exit(runFixture(os.Args[2]))
	}
	os.Exit(m.Run())
}

// fixture returns the argv that starts the fixture in mode:
//   - "serve": an MCP server with echo, grow (adds a tool, so the server
//     sends notifications/tools/list_changed), crash (writes to stderr and
//     exits), and two tools whose names no provider accepts as they are;
//   - "die": writes 30 lines to stderr and exits 1 without speaking MCP,
//     as a server whose script is missing does.
func fixture(t *testing.T, mode string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, fixtureArg, mode}
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type growIn struct {
	Name string `json:"name" jsonschema:"the name of the tool to add"`
}

func runFixture(mode string) int {
	switch mode {
	case "die":
		for i := 1; i < 30; i++ {
			fmt.Fprintf(os.Stderr, "fixture: starting, step %d\n", i)
		}
		fmt.Fprintln(os.Stderr, "Error: Cannot find module '/nowhere/server.js'")
		return 1
	case "serve":
	default:
		fmt.Fprintf(os.Stderr, "fixture: unknown mode %q\n", mode)
		return 2
	}
	fmt.Fprintln(os.Stderr, "fixture: serving on stdio")
	s := newFixtureServer()
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fixture:", err)
		return 1
	}
	return 0
}

// newFixtureServer builds the fixture's MCP server (see fixture): over
// stdio in a subprocess, or in-process over Streamable HTTP, where crash
// must not be called.
func newFixtureServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "fixture", Version: "1"}, nil)
	echo := func(prefix string) sdk.ToolHandlerFor[echoIn, any] {
		return func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: prefix + in.Text}}}, nil, nil
		}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes the text."}, echo("echo: "))
	sdk.AddTool(s, &sdk.Tool{Name: fixtureDotted, Description: "A tool with a dot and a slash in its name."}, echo("dotted: "))
	sdk.AddTool(s, &sdk.Tool{Name: fixtureLong, Description: "A tool with a long name."}, echo("long: "))
	sdk.AddTool(s, &sdk.Tool{Name: "grow", Description: "Adds a tool that echoes."},
		func(_ context.Context, _ *sdk.CallToolRequest, in growIn) (*sdk.CallToolResult, any, error) {
			sdk.AddTool(s, &sdk.Tool{Name: in.Name, Description: "Added by grow."}, echo(in.Name+": "))
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "added " + in.Name}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exits the server."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, fixtureCrash)
			os.Exit(3)
			return nil, nil, nil
		})
	return s
}
