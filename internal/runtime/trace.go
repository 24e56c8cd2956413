package runtime

import "context"

// Tracer starts the spans of slices and of their phases. Engine.Tracer nil
// means no tracing: the engine then builds no span, reads no clock for one
// and stamps no trace context on what it sends (one nil check per phase).
// internal/otelx implements it with OpenTelemetry; the runtime imports no
// tracing library.
//
// The trace context travels as a W3C traceparent (Message.Trace,
// Invocation.Trace): the engine stamps it on every message it sends and
// every call it dispatches, so that the slice a message wakes, however
// much later and in whatever process, continues the trace of the slice
// that sent it (see StartSlice).
type Tracer interface {
	// StartSlice starts the span of one slice of threadID. batch is the
	// slice's input: a tracer makes the span a child of the first
	// message's Trace and links it to the other messages' traces.
	StartSlice(ctx context.Context, threadID string, batch []Message) (context.Context, Span)
	// Start starts a span named name, a child of the span in ctx.
	Start(ctx context.Context, name string) (context.Context, Span)
	// Traceparent is the W3C traceparent of the span in ctx, "" when
	// ctx holds none.
	Traceparent(ctx context.Context) string
}

// Span is one span a Tracer started. Its methods are called from the
// slice's goroutine only.
type Span interface {
	SetString(key, value string)
	SetInt(key string, value int64)
	SetStrings(key string, values []string)
	// End ends the span; a non-nil err marks it failed.
	End(err error)
}

// The span names and attribute keys the engine uses. Completion spans
// follow the OpenTelemetry GenAI semantic conventions.
const (
	SpanSlice      = "slice"
	SpanLoad       = "load"
	SpanCompletion = "chat"
	SpanCommit     = "commit"
	SpanSend       = "send"
	SpanDispatch   = "dispatch"
	SpanMark       = "mark"

	AttrThread    = "agentslice.thread"
	AttrAgent     = "agentslice.agent"
	AttrVersion   = "agentslice.version"
	AttrBatch     = "agentslice.batch_size"
	AttrOutcome   = "agentslice.outcome"
	AttrTool      = "agentslice.tool"
	AttrToolCall  = "agentslice.tool_call"
	AttrMessages  = "agentslice.messages"
	AttrCompleted = "agentslice.completions"

	AttrGenAIOperation    = "gen_ai.operation.name"
	AttrGenAIModel        = "gen_ai.request.model"
	AttrGenAIInputTokens  = "gen_ai.usage.input_tokens"
	AttrGenAIOutputTokens = "gen_ai.usage.output_tokens"
	AttrGenAIFinish       = "gen_ai.response.finish_reasons"
	AttrGenAIAgent        = "gen_ai.agent.name"
	AttrGenAIToolName     = "gen_ai.tool.name"
	AttrGenAIToolCallID   = "gen_ai.tool.call.id"
)

// span starts a child span of the slice's when the engine traces; end
// (never nil) ends it. Without a tracer it returns ctx and a no-op.
func (s *slice) span(ctx context.Context, name string) (context.Context, Span) {
	if s.e.Tracer == nil {
		return ctx, nil
	}
	return s.e.Tracer.Start(ctx, name)
}

// endSpan ends sp when there is one.
func endSpan(sp Span, err error) {
	if sp != nil {
		sp.End(err)
	}
}

// traceparent is the trace context to stamp on what the slice sends from
// ctx ("" without a tracer).
func (s *slice) traceparent(ctx context.Context) string {
	if s.e.Tracer == nil {
		return ""
	}
	return s.e.Tracer.Traceparent(ctx)
}

// traced is m with the trace context of ctx when it carries none (and the
// engine traces).
func (s *slice) traced(ctx context.Context, m Message) Message {
	if m.Trace == "" && s.e.Tracer != nil {
		m.Trace = s.traceparent(ctx)
	}
	return m
}

// dispatchSpan starts the span of inv's dispatch and gives inv its trace
// context, also when the trace is not sampled (the turn then stays
// unsampled downstream).
func (s *slice) dispatchSpan(ctx context.Context, inv *Invocation) (context.Context, Span) {
	dctx, sp := s.span(ctx, SpanDispatch)
	inv.Trace = s.traceparent(dctx)
	if sp != nil {
		sp.SetString(AttrGenAIToolName, inv.Name)
		sp.SetString(AttrGenAIToolCallID, inv.CallID)
	}
	return dctx, sp
}

// endCommitSpan ends a commit's span (when there is one) with the version
// committed.
func endCommitSpan(sp Span, version int64, err error) {
	if sp != nil {
		sp.SetInt(AttrVersion, version)
		sp.End(err)
	}
}

// outcome names how a slice ended, for its span.
func outcome(res *SliceResult, err error) string {
	switch {
	case err != nil:
		return "error"
	case res.ModelErr != nil:
		return "model_failed"
	case res.Dispatched != "":
		return "dispatched"
	case res.Continued:
		return "continued"
	case res.Completions > 0:
		return "replied"
	case len(res.Processed) == 0:
		return "nothing"
	}
	return "folded"
}

// ValidTraceparent reports whether tp has the shape of a W3C traceparent
// (see validTraceparent).
func ValidTraceparent(tp string) bool { return tp != "" && validTraceparent(tp) }

// validTraceparent reports whether tp has the shape of a W3C traceparent:
// version-traceid-parentid-flags in lowercase hex (2-32-16-2), version not
// ff, IDs not all zeros; a later version may append "-" and more.
func validTraceparent(tp string) bool {
	if len(tp) < 55 || (len(tp) > 55 && (tp[:2] == "00" || tp[55] != '-')) || len(tp) > 256 {
		return false
	}
	if tp[2] != '-' || tp[35] != '-' || tp[52] != '-' || tp[:2] == "ff" {
		return false
	}
	hex := func(s string) (zero bool, ok bool) {
		zero = true
		for i := 0; i < len(s); i++ {
			c := s[i]
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false, false
			}
			if c != '0' {
				zero = false
			}
		}
		return zero, true
	}
	_, okV := hex(tp[:2])
	zt, okT := hex(tp[3:35])
	zp, okP := hex(tp[36:52])
	_, okF := hex(tp[53:55])
	return okV && okT && okP && okF && !zt && !zp
}

// endSliceSpan sets the slice span's attributes from the slice's result
// and ends it.
func (s *slice) endSliceSpan(sp Span, batch int, err error) {
	res := s.res
	sp.SetString(AttrThread, s.threadID)
	if res.Agent != "" {
		sp.SetString(AttrAgent, res.Agent)
	}
	sp.SetInt(AttrVersion, s.version)
	sp.SetInt(AttrBatch, int64(batch))
	sp.SetInt(AttrCompleted, int64(res.Completions))
	sp.SetString(AttrOutcome, outcome(res, err))
	if res.Dispatched != "" {
		sp.SetString(AttrToolCall, res.Dispatched)
	}
	sp.End(err)
}

// endCompletionSpan sets a completion span's GenAI attributes and ends it.
func (s *slice) endCompletionSpan(sp Span, req *CompletionRequest, attempts int, err error) {
	sp.SetString(AttrGenAIOperation, "chat")
	model := req.Model
	if model == "" {
		model = "default"
	}
	sp.SetString(AttrGenAIModel, model)
	if req.Agent != "" {
		sp.SetString(AttrGenAIAgent, req.Agent)
	}
	sp.SetInt("agentslice.attempts", int64(attempts))
	if err == nil {
		u := s.buf.usage
		sp.SetInt(AttrGenAIInputTokens, int64(u.Input))
		sp.SetInt(AttrGenAIOutputTokens, int64(u.Output))
		finish := "stop"
		if s.buf.call != nil {
			finish = "tool_calls"
		}
		sp.SetStrings(AttrGenAIFinish, []string{finish})
	}
	sp.End(err)
}
