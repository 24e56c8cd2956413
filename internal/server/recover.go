package server

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/mcp"
	"github.com/agentslice/agentslice/internal/rap/tools"
	"github.com/agentslice/agentslice/internal/runtime"
)

// PendingCallChecker is the hook for a call to an external tool server
// that was dispatched before a restart and has no result yet: it may ask
// the tool (RAP /tool_call_status) and enqueue the result or an error
// result through the system, reporting answered=true; or leave the call to
// its callback. The RAP liveness work (issue 13) implements it.
type PendingCallChecker interface {
	CheckPendingCall(ctx context.Context, threadID string, call runtime.PendingCall) (answered bool, err error)
}

// recoverDurable picks up, before the API serves, what the previous process
// left in the data directory: sleeps are re-armed from their stored wake
// times (one already past fires at once); threads whose committed state
// still has an outbox to send or a call to dispatch run a slice (same IDs:
// continuations are outbox messages too); dispatched calls still waiting
// are checked (checkPendingCall); accepted messages not yet consumed are
// queued again in the order they were accepted. Idle threads are not
// loaded. It does nothing for the memory and postgres stores.
func (s *Server) recoverDurable(ctx context.Context) error {
	if s.db == nil {
		return nil
	}
	timers, ok := s.timers.(diskTimers)
	if !ok {
		return fmt.Errorf("server: recovering: timers are not durable")
	}
	armed, err := timers.Rearm(ctx)
	if err != nil {
		return fmt.Errorf("server: recovering sleeps: %w", err)
	}
	h := s.db.History()
	kick, err := h.NeedAttention(ctx)
	if err != nil {
		return fmt.Errorf("server: recovering: %w", err)
	}
	if err := s.sys.Kick(kick...); err != nil {
		return fmt.Errorf("server: recovering threads with unsent work: %w", err)
	}
	calls, err := h.PendingCalls(ctx)
	if err != nil {
		return fmt.Errorf("server: recovering: %w", err)
	}
	answered := 0
	round := time.Now().UTC().Format(time.RFC3339Nano) // keeps this start's checks apart from an earlier start's
	for _, c := range calls {
		done, err := s.checkPendingCall(ctx, c, round)
		if err != nil {
			return fmt.Errorf("server: checking call %s of thread %s: %w", c.Call.ID, c.ThreadID, err)
		}
		if done {
			answered++
		}
	}
	msgs, err := s.db.Inbox().Pending(ctx)
	if err != nil {
		return fmt.Errorf("server: recovering accepted messages: %w", err)
	}
	if len(msgs) > 0 {
		if err := s.sys.Send(ctx, msgs...); err != nil {
			return fmt.Errorf("server: queueing %d recovered messages: %w", len(msgs), err)
		}
	}
	s.log.Info("recovered from the data directory", "dir", s.db.Dir(), "sleeps_rearmed", armed.Sleeps,
		"checks_rearmed", armed.Checks, "provider_waits_rearmed", armed.Retries, "timers_later", armed.Later, "threads_resumed", len(kick),
		"pending_calls", len(calls), "pending_calls_answered", answered, "messages_requeued", len(msgs))
	return nil
}

// checkPendingCall decides what happens to a call dispatched before the
// restart that has no result yet, and reports whether it answered it.
//
//   - Built-in tools (sleeps, threads) need nothing: their wake-ups and
//     results are durable (timers, inbox, outbox).
//   - A tool of an in-process tool server (example tools, MCP proxies) was
//     running inside the process that died: nothing will ever answer it, and
//     whether it had an effect is unknown. The thread gets an error result
//     saying so (with the result's usual ID, so a late real one is
//     deduplicated), and the model decides whether to call it again.
//   - A tool of an external RAP server answers through its callback URL,
//     which survives the restart (the callback key is kept in the data
//     directory). It may also have forgotten the call (restarted): the
//     thread is sent a liveness check (runtime.Engine.RecheckThread), whose
//     slice asks the server's /tool_call_status and closes the call with an
//     error result if the server says it is dead. Options.PendingCalls,
//     when set, replaces that check (tests).
func (s *Server) checkPendingCall(ctx context.Context, c disk.PendingCall, round string) (bool, error) {
	if s.builtinTool(c.Call.Name) {
		return false, nil
	}
	if !s.inProcessTool(c.Call.Name) {
		if s.opts.PendingCalls == nil {
			return false, s.sys.Engine().RecheckThread(ctx, c.ThreadID, round)
		}
		return s.opts.PendingCalls.CheckPendingCall(ctx, c.ThreadID, c.Call)
	}
	msg := runtime.Message{V: runtime.MessageVersion, ID: runtime.ResultID(c.ThreadID, c.Call.ID), ThreadID: c.ThreadID,
		Kind: runtime.KindToolResult, ToolCallID: c.Call.ID, IsError: true,
		Text: "error: the agentslice server restarted while " + c.Call.Name + " was running; its result is lost and whether it took effect is unknown. Call it again if you still need it."}
	if err := s.sys.Send(ctx, msg); err != nil {
		return false, err
	}
	return true, nil
}

func (s *Server) builtinTool(name string) bool {
	for _, e := range append(runtime.ThreadTools(), runtime.SleepTools(nil, nil)...) {
		if e.Spec.Name == name {
			return true
		}
	}
	return false
}

// inProcessTool reports whether name is a tool of the in-process servers.
func (s *Server) inProcessTool(name string) bool {
	if e := s.cfg.ExampleTools; e != nil {
		if e.GetTime && name == tools.GetTime(nil).Name {
			return true
		}
		if e.RunCommand != nil && name == tools.RunCommand(tools.RunCommandConfig{}).Name {
			return true
		}
	}
	for _, m := range s.cfg.MCPServers {
		// The meta-tools' names too: a call from before the server was
		// switched to first-class tools (or to meta_tools).
		if strings.HasPrefix(name, mcp.ToolPrefix(m.Name)) || name == mcp.ListToolsName(m.Name) || name == mcp.InvokeToolName(m.Name) {
			return true
		}
	}
	return false
}
