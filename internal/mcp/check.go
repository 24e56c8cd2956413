package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Check connects to the MCP server (starting the subprocess of a stdio
// server) and pings it, so that a server that cannot start is reported
// when the proxy starts instead of at the first tool call. The session is
// kept for the calls that follow.
func (p *Proxy) Check(ctx context.Context) error {
	return p.withSession(ctx, func(ctx context.Context, s *sdk.ClientSession) error {
		if err := s.Ping(ctx, nil); err != nil {
			return fmt.Errorf("pinging MCP server %s: %w", p.cfg.Name, err)
		}
		return nil
	})
}
