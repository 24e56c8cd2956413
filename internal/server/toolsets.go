package server

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
)

// Degraded start. An agent's allow-list may name a toolset that only a
// tool server announces. When that server cannot be loaded at start, serve
// starts anyway (the RAP specification: a failed toolset fetch SHOULD
// proceed and MUST be reported): it logs the toolsets it goes without,
// lists them under "unavailable_toolsets" in /healthz, and the model of an
// agent that allows them is told they are unavailable and will be retried
// (runtime.unavailableNote). Threads fetch their toolsets again on their
// own (the loader's backoff); recheckToolsets only keeps the report true
// and logs the recovery. A name no server announces although every server
// answered is a typo, and Start refuses it (checkRemoteToolsets).

// ToolsetRecheck is how often serve looks again for allow-listed toolsets
// it could not load.
const ToolsetRecheck = 30 * time.Second

// toolsetHealth is the latest known set of unavailable toolsets.
type toolsetHealth struct {
	mu      sync.Mutex
	missing []string
}

// missingToolsets lists, sorted, the allow-listed remote toolsets set holds
// no tool of.
func missingToolsets(want map[string]string, set *rap.Set) []string {
	have := map[string]bool{}
	for _, sp := range set.Specs() {
		if e, ok := set.Lookup(sp.Name); ok {
			have[e.Toolset] = true
		}
	}
	var out []string
	for n := range want {
		if !have[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// noteUnavailable records which allow-listed toolsets set lacks, logging
// each change: an error while some are missing, info when all are back.
func (s *Server) noteUnavailable(set *rap.Set) {
	missing := missingToolsets(s.set.remoteToolsets, set)
	s.toolsets.mu.Lock()
	changed := !slices.Equal(missing, s.toolsets.missing)
	s.toolsets.missing = missing
	s.toolsets.mu.Unlock()
	switch {
	case !changed:
	case len(missing) > 0:
		fields := make([]string, len(missing))
		for i, n := range missing {
			fields[i] = s.set.remoteToolsets[n]
		}
		var problem string
		if p := set.Problems(); len(p) > 0 {
			problem = p[0].Error()
		}
		s.log.Error("allow-listed toolsets are unavailable: serving without them, retrying", "toolsets", strings.Join(missing, ","),
			"config", strings.Join(fields, ","), "problems", len(set.Problems()), "first_problem", problem)
	default:
		s.log.Info("allow-listed toolsets are available again")
	}
}

// unavailableToolsets returns the allow-listed toolsets missing at the
// latest check (never nil, for /healthz).
func (s *Server) unavailableToolsets() []string {
	s.toolsets.mu.Lock()
	defer s.toolsets.mu.Unlock()
	return append([]string{}, s.toolsets.missing...)
}

// recheckToolsets loads the toolsets again every ToolsetRecheck until none
// is missing or the server stops.
func (s *Server) recheckToolsets() {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // ends with this loop (cancel) or at Stop
		select {
		case <-s.stopping:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(ToolsetRecheck)
	defer t.Stop()
	for {
		select {
		case <-s.stopping:
			return
		case <-t.C:
			if s.recheckToolsetsOnce(ctx) == 0 {
				return
			}
		}
	}
}

// recheckToolsetsOnce loads every toolset now, records what is still
// missing and returns how many are.
func (s *Server) recheckToolsetsOnce(ctx context.Context) int {
	ctx, cancel := context.WithTimeout(ctx, ToolsetRecheck)
	defer cancel()
	s.noteUnavailable(s.loader.Load(ctx))
	return len(s.unavailableToolsets())
}
