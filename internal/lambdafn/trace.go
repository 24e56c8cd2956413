package lambdafn

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentslice/agentslice/internal/otelx"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The spans of the receiver and the delay relay: each message they pass
// on with a trace context (Message.Trace: the signed callback URL's, or
// the wake-up's) gets a span of its own, a child of that context, and
// goes on carrying the span's context instead, so the slice that consumes
// it is the span's child: dispatch, callback, slice (or sleep, relay,
// slice) in one trace. A message without a trace context passes as it is:
// these functions start no trace of their own.
const (
	SpanCallback = "rap.callback"
	SpanRelay    = "delay.relay"
)

// tracedQueue wraps a queue with those spans.
type tracedQueue struct {
	q    runtime.Queue
	t    trace.Tracer
	name string
}

// traceQueue returns q, traced with t's spans named name; q itself when
// t is nil (tracing off).
func traceQueue(q runtime.Queue, t *otelx.Tracing, name string) runtime.Queue {
	if t == nil {
		return q
	}
	return &tracedQueue{q: q, t: t.Provider().Tracer(otelx.ScopeName), name: name}
}

func (tq *tracedQueue) Send(ctx context.Context, msgs ...runtime.Message) error {
	var spans []trace.Span
	out, copied := msgs, false
	for i := range msgs {
		m := &msgs[i]
		sc, ok := otelx.ParseTraceparent(m.Trace)
		if !ok {
			continue
		}
		_, sp := tq.t.Start(trace.ContextWithRemoteSpanContext(ctx, sc), tq.name, trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(attribute.String("agentslice.thread", m.ThreadID), attribute.String("agentslice.message", m.ID),
				attribute.String("agentslice.kind", string(m.Kind))))
		spans = append(spans, sp)
		if sp.SpanContext().IsSampled() {
			if !copied { // the caller's messages stay as they were
				out, copied = append([]runtime.Message(nil), msgs...), true
			}
			out[i].Trace = otelx.Traceparent(sp.SpanContext())
		}
	}
	err := tq.q.Send(ctx, out...)
	for _, sp := range spans {
		if err != nil {
			sp.RecordError(err)
			sp.SetStatus(codes.Error, err.Error())
		}
		sp.End()
	}
	return err
}

// FlushBound is the most time a receiver or relay invocation spends
// exporting its spans before it returns.
const FlushBound = 2 * time.Second

// flush exports t's ended spans before an invocation returns (Lambda
// freezes the environment then): within FlushBound, and within half the
// time left before the invocation's deadline.
func flush(ctx context.Context, t *otelx.Tracing) {
	if t == nil {
		return
	}
	bound := FlushBound
	if dl, ok := ctx.Deadline(); ok {
		bound = min(bound, time.Until(dl)/2)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	_ = t.Flush(fctx)
}

// WithFlush returns h, exporting t's spans before each invocation returns
// (flush); h itself when t is nil.
func WithFlush[E, R any](h func(context.Context, E) (R, error), t *otelx.Tracing) func(context.Context, E) (R, error) {
	if t == nil {
		return h
	}
	return func(ctx context.Context, ev E) (R, error) {
		defer flush(ctx, t)
		return h(ctx, ev)
	}
}
