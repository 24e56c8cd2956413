package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
)

// complete runs completions until the model stops calling tools, calls an
// asynchronous tool, or the slice reaches its cap or deadline.
func (s *slice) complete(ctx context.Context) error {
	if _, err := s.applyAgent(); err != nil {
		s.failModel(ctx, err, 0)
		return nil
	}
	for {
		n := s.res.Completions
		if s.st.Closed || s.st.Pending != nil || s.budgetWait() != nil {
			return nil
		}
		// The deadline stops a slice only after it made progress: a slice
		// that starts too late still runs one completion, so continuations
		// cannot chase each other without work being done.
		if s.res.Completions >= s.lim.MaxCompletions || (n > 0 && !s.deadline.IsZero() && !s.e.now().Before(s.deadline)) {
			s.continueLater()
			return nil
		}
		call, attempts, err := s.completion(ctx, n)
		if err != nil {
			if IsPermanent(err) {
				s.failModel(ctx, err, attempts)
				return nil
			}
			if s.e.ProviderWait == nil || s.e.ProviderWait.Timers == nil || attempts == 0 || ctx.Err() != nil {
				return err
			}
			// Every attempt failed with a retryable error: the thread
			// waits for the provider through a timer, or, once it has
			// waited long enough, the completion fails for good.
			waiting, werr := s.waitForProvider(ctx, err)
			if werr != nil {
				return werr
			}
			if !waiting {
				s.failModel(ctx, err, attempts)
			}
			return nil
		}
		if s.st.ModelWait != nil {
			s.st.ModelWait = nil // the provider is back
		}
		if call == nil {
			return nil
		}
		if !s.runCall(ctx, call) {
			return nil // an asynchronous call is pending
		}
	}
}

// completion runs one completion with retries and appends its turn. It
// returns the tool call the turn ends with, if any, and how often the
// model was called (0 when it failed before that).
func (s *slice) completion(ctx context.Context, n int) (*Item, int, error) {
	ts, err := s.toolsetFor(ctx)
	if err != nil {
		return nil, 0, err
	}
	hist, inherited := ModelView(s.view, s.th.Inherited, s.th.Base)
	// The request lives in the slice: a model must not keep it past
	// Complete (see Model).
	s.req = CompletionRequest{ThreadID: s.threadID, History: hist, Inherited: inherited, Tools: ts.Specs(),
		Model: s.st.Model, engine: true, version: s.version, n: n, own: s.view[s.th.Inherited:],
		turnBase: s.turnBase, joined: s.joined, pending: s.view[s.mark:], at: s.length}
	req := &s.req
	model := s.e.Model
	if v := s.agent.v; v != nil {
		req.System, req.Agent, model = v.Agent.Instructions, v.Agent.Name, s.agentModel(v)
		if note := unavailableNote(ts); note != "" {
			req.System += note
		}
	}
	held, paused, err := s.admit(ctx)
	if err != nil || paused {
		return nil, 0, err
	}
	mctx := s.modelContext(ctx)
	// The completion's duration is kept in history (Item.Took).
	start := s.e.now()
	var lastErr error
	attempts := 0
	mctx, sp := s.span(mctx, SpanCompletion)
	if sp != nil {
		defer func() { s.endCompletionSpan(sp, req, attempts, lastErr) }()
	}
	for attempt := 1; attempt <= s.lim.ModelAttempts; attempt++ {
		if attempt > 1 {
			if err := s.backoff(mctx, attempt-1); err != nil {
				// No time for another attempt: the attempts made count.
				return nil, attempts, fmt.Errorf("runtime: model retry for thread %s: %w (last error: %v)", s.threadID, err, lastErr)
			}
		}
		s.buf.reset()
		attempts = attempt
		lastErr = model.Complete(mctx, req, &s.buf)
		if lastErr == nil {
			break
		}
		if IsPermanent(lastErr) {
			return nil, attempts, lastErr
		}
		if mctx.Err() != nil || s.waitsLonger(lastErr) {
			break
		}
	}
	if lastErr != nil {
		if err := s.settle(ctx, held, Usage{}); err != nil {
			slog.WarnContext(ctx, "releasing a failed completion's reservation", "thread", s.threadID, "error", err)
		}
		if mctx.Err() != nil && ctx.Err() == nil {
			attempts = 0 // the slice's own deadline cut the completion: not the provider's fault
		}
		return nil, attempts, fmt.Errorf("runtime: completion %s for thread %s failed after %d attempts: %w", req.ID(), s.threadID, attempts, lastErr)
	}
	s.res.Completions++
	if err := s.crash(CrashAfterCompletion); err != nil {
		return nil, 0, err // a crash, not the provider: the slice is retried
	}
	b := &s.buf
	usage := b.usage
	if err := s.settle(ctx, held, usage); err != nil {
		return nil, 0, err // the slice is retried: its completion finds the reservation held
	}
	if usage.Total > 0 {
		s.st.Tokens = usage.Total
	}
	s.st.Usage.Add(usage)
	s.res.Usage.Add(usage)
	if b.dropped > 0 || b.droppedAfter > 0 {
		slog.WarnContext(ctx, "model streamed more than one tool call; only the first is executed",
			"thread", s.threadID, "completion", req.ID(), "dropped_calls", b.dropped, "dropped_text_bytes", b.droppedAfter)
	}
	end := s.e.now()
	took := Millis(end.Sub(start))
	s.res.Generating += end.Sub(start)
	var up *Usage
	if usage != (Usage{}) {
		u := usage
		up = &u
	}
	text := string(b.text)
	if len(b.text) > 0 || len(b.reasoning) > 0 || len(b.blocks) > 0 || b.call == nil {
		it := Item{Kind: ItemAssistant, Took: took, Text: text, Reasoning: string(b.reasoning), Usage: up}
		took = 0 // the completion's first item carries its duration
		if len(b.blocks) > 0 {
			it.Trace = &ReasoningTrace{Blocks: append([]ReasoningBlock(nil), b.blocks...)}
		}
		s.appendItem(it)
		up = nil
	}
	if s.e.wants(EventCompletionFinished, false) {
		s.tell(ctx, Event{Type: EventCompletionFinished, ThreadID: s.threadID, Duration: end.Sub(start)})
	}
	if b.call == nil {
		if s.st.Compaction {
			s.deliverSummary(text)
			return nil, attempts, nil
		}
		reply := &OutputEvent{ID: incarnationID("out_", s.st.Incarnation, s.threadID, strconv.Itoa(s.ownPos())), ThreadID: s.threadID, Kind: "reply", Text: text}
		if s.st.Usage != (Usage{}) {
			u := s.st.Usage
			reply.Usage = &u
		}
		if v := s.agent.v; v != nil {
			reply.Agent = v.Agent.Name
		}
		s.addOutbox(OutboxEntry{Output: reply})
		return nil, attempts, nil
	}
	call := Item{Kind: ItemToolCall, Took: took, CallID: callID(s.threadID, s.st.Incarnation, s.ownPos()), Name: b.call.Name, Args: b.call.Args, Usage: up}
	if call.Args == "" {
		call.Args = "{}"
	}
	s.appendItem(call)
	return &s.view[len(s.view)-1], attempts, nil
}

// modelContext returns the context model calls run in: bounded by the
// slice's deadline, so that a slow model leaves the margin for the commit.
// It is made once per slice, at the first completion (a timer per slice,
// not per completion), and cancelled when the slice ends.
func (s *slice) modelContext(ctx context.Context) context.Context {
	if s.mctx == nil {
		s.mctx = ctx
		// Only a context deadline (a Lambda's) is enforced on the model
		// call itself; SliceInput.Deadline alone bounds when the slice stops
		// starting completions, and a hung provider is bounded by its own
		// timeouts.
		if dl, ok := ctx.Deadline(); ok && !s.deadline.IsZero() && s.deadline.Before(dl) {
			s.mctx, s.mcancel = context.WithDeadline(ctx, s.deadline)
		}
	}
	return s.mctx
}

func (s *slice) toolsetFor(ctx context.Context) (Toolset, error) {
	if s.toolset == nil {
		ts, err := s.e.Tools.Toolset(ctx, s.th)
		if err == nil && ts == nil {
			err = errors.New("the tool source returned no toolset")
		}
		if err != nil {
			return nil, fmt.Errorf("runtime: loading tools for thread %s: %w", s.threadID, err)
		}
		if v, aerr := s.resolveAgent(); aerr != nil {
			ts = NewToolbox() // an undefined agent may use nothing; its completion fails anyway
		} else if v != nil {
			ts = filterToolset(ts, &v.Agent)
		}
		s.toolset = ts
	}
	return s.toolset, nil
}

// runCall handles the tool call that ended a turn. It reports whether the
// model should run again now (the call got its result inline).
func (s *slice) runCall(ctx context.Context, call *Item) bool {
	c := *call
	errResult := func(format string, args ...any) bool {
		s.appendItem(Item{Kind: ItemToolResult, CallID: c.CallID, Name: c.Name, IsError: true, Text: fmt.Sprintf(format, args...)})
		return true
	}
	if c.Name == InjectedToolName {
		return errResult("error: %s is reserved for events delivered by the runtime and cannot be called", InjectedToolName)
	}
	// The toolset was loaded for this completion already, so lookup
	// cannot fail here.
	entry, ok, _ := s.lookup(ctx, c.Name)
	if !ok {
		return errResult("error: unknown tool %q; available tools: %s", c.Name, toolNames(s.toolset))
	}
	if !jsonObject(c.Args) {
		return errResult("error: arguments for %s are not a JSON object: %.200q", c.Name, c.Args)
	}
	if v, ok := entry.Async.(ArgsValidator); ok && entry.Async != nil {
		if err := v.ValidateArgs(c.Args); err != nil {
			return errResult("error: invalid arguments for %s: %v", c.Name, err)
		}
	}
	if v, ok := entry.Sync.(ArgsValidator); ok && entry.Sync != nil {
		if err := v.ValidateArgs(c.Args); err != nil {
			return errResult("error: invalid arguments for %s: %v", c.Name, err)
		}
	}
	if entry.Sync != nil {
		ran := s.e.now()
		env := &SyncEnv{Thread: s.th, State: &s.st, Position: s.th.Base + len(s.view) - 1, CallID: c.CallID, Now: ran,
			Agent: s.agent.v, Agents: s.e.Agents, MaxChildren: s.lim.MaxChildren}
		out, err := entry.Sync.Run(ctx, env, Invocation{ThreadID: s.threadID, CallID: c.CallID, Name: c.Name,
			Args: c.Args, Ancestors: ancestors(s.st.Stack), Class: s.st.Class.OrDefault(), Incarnation: s.st.Incarnation})
		if err != nil {
			var rej *ToolRejectedError
			if errors.As(err, &rej) {
				return errResult("error: %s", rej.Reason)
			}
			return errResult("error: %s failed: %v", c.Name, err)
		}
		s.children = append(s.children, env.children...)
		s.addOutbox(env.outbox...)
		s.appendItem(Item{Kind: ItemToolResult, Took: Millis(s.e.now().Sub(ran)), CallID: c.CallID, Name: c.Name, Text: out.Text, IsError: out.IsError})
		return true
	}
	s.st.Pending = &PendingCall{ID: c.CallID, Name: c.Name, Args: c.Args}
	s.changed()
	return false
}

// continueLater enqueues a continuation so a capped slice's work goes on in
// the next slice instead of being lost.
func (s *slice) continueLater() {
	v := s.version + 1
	m := Message{V: MessageVersion, ID: incarnationID("cont_", s.st.Incarnation, s.threadID, strconv.FormatInt(v, 10)),
		ThreadID: s.threadID, Kind: KindContinue}
	if !mutateDropsContinuation() {
		s.addOutbox(OutboxEntry{Message: &m})
	}
	s.changed()
}

func toolNames(ts Toolset) string {
	if ts == nil {
		return "(none)"
	}
	out := ""
	for i, sp := range ts.Specs() {
		if i > 0 {
			out += ", "
		}
		out += sp.Name
	}
	if out == "" {
		return "(none)"
	}
	return out
}
