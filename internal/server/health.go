package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
)

// healthProbeTimeout bounds one component's probe.
const healthProbeTimeout = 5 * time.Second

// component is one part serve depends on, as /healthz and /readyz report
// it: the store, each configured tool server and MCP server (the
// in-process example tools are part of the process and not listed).
type component struct {
	Name string `json:"name"`
	// Kind is "store", "tool_server" or "mcp_server".
	Kind string `json:"kind"`
	// Status is "ok" or "degraded".
	Status string `json:"status"`
	// Reason says what is wrong with a degraded part.
	Reason string `json:"reason,omitempty"`
	// Required parts make /readyz fail while degraded. Every configured
	// part is required: the operator configured it for agents to use.
	Required bool `json:"required"`
}

// healthReportTTL is how long one probe of the parts answers /healthz and
// /readyz: the endpoints take no token, and each probe reaches every tool
// and MCP server, so a poller (or a flood) costs them at most one probe
// per TTL, not one per request.
const healthReportTTL = 2 * time.Second

// healthReport is the latest probe of the parts; mu also makes requests
// that arrive during a probe wait for it rather than probe again.
type healthReport struct {
	mu  sync.Mutex
	at  time.Time
	cs  []component
	now func() time.Time // nil: the engine's clock (tests fix it)
}

// components returns the parts' status, probed at most once per
// healthReportTTL (see probeComponents).
func (s *Server) components(ctx context.Context) []component {
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	now := s.sys.Engine().Clock
	if h.now != nil {
		now = h.now
	}
	at := now()
	if h.cs != nil && at.Sub(h.at) < healthReportTTL && !at.Before(h.at) {
		return h.cs
	}
	// One probe serves every waiting request: the first requester going
	// away must not cut it short (each part is bounded by its timeout).
	h.cs, h.at = s.probeComponents(context.WithoutCancel(ctx)), at
	return h.cs
}

// probeComponents probes every part at once, each bounded by
// healthProbeTimeout: the store with a load, a tool server with a fetch of
// its toolset, an MCP server with a ping (connecting, or starting its
// subprocess, if needed).
func (s *Server) probeComponents(ctx context.Context) []component {
	out := make([]component, 1+len(s.cfg.ToolServers)+len(s.proxies))
	var wg sync.WaitGroup
	probe := func(i int, c component, f func(ctx context.Context) error) {
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, healthProbeTimeout)
			defer cancel()
			c.Status, c.Required = "ok", true
			if err := f(pctx); err != nil {
				c.Status, c.Reason = "degraded", err.Error()
			}
			out[i] = c
		}()
	}
	probe(0, component{Name: string(s.set.store.kind), Kind: "store"}, func(ctx context.Context) error {
		if _, err := s.store.Load(ctx, "healthz-probe"); err != nil {
			return fmt.Errorf("the store cannot be read: %w", err)
		}
		return nil
	})
	for i, base := range s.cfg.ToolServers {
		probe(1+i, component{Name: base, Kind: "tool_server"}, func(ctx context.Context) error { return s.probeToolServer(ctx, base) })
	}
	for i, p := range s.proxies {
		name := s.cfg.MCPServers[i].Name
		probe(1+len(s.cfg.ToolServers)+i, component{Name: name, Kind: "mcp_server"}, func(ctx context.Context) error {
			if err := p.Check(ctx); err != nil {
				return fmt.Errorf("MCP server %s (mcp_servers[%d]) is unreachable: %w", name, i, err)
			}
			return nil
		})
	}
	wg.Wait()
	return out
}

// probeToolServer fetches a RAP server's toolset document.
func (s *Server) probeToolServer(ctx context.Context, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+rap.ToolsetPath, nil)
	if err != nil {
		return fmt.Errorf("tool server %s: %w", base, err)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("tool server %s is unreachable: %w", base, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, rap.MaxToolsetBytes))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("tool server %s answered HTTP %d to GET %s", base, resp.StatusCode, rap.ToolsetPath)
	}
	return nil
}

// degraded reports whether any (required) component is degraded.
func degraded(cs []component, requiredOnly bool) bool {
	for _, c := range cs {
		if c.Status != "ok" && (c.Required || !requiredOnly) {
			return true
		}
	}
	return false
}

// healthz is liveness: always 200 while the process serves, with counters
// and each part's status ("status" is "degraded" when one is).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	_, dead := s.sys.DeadLetters()
	subs, _ := s.events.Subscribers()
	st := s.store.Stats()
	cs := s.components(r.Context())
	unavailable := s.unavailableToolsets()
	status := "ok"
	if degraded(cs, false) || len(unavailable) > 0 {
		status = "degraded"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"status": status, "threads": st.Threads, "hot_threads": st.Hot, "active_threads": s.sys.Active(),
		"dead_letters": dead, "event_subscribers": subs, "dropped_subscribers": s.events.DroppedCount(),
		"model": s.set.model.Name, "components": cs, "unavailable_toolsets": unavailable,
	})
}

// readyz is readiness: 200 when every required part is ok, else 503 with
// the parts and why.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	cs := s.components(r.Context())
	if degraded(cs, true) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not_ready", "components": cs})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "components": cs})
}
