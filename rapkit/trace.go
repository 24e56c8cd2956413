package rapkit

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TraceparentHeader is the W3C Trace Context header an invocation POST
// carries when the runtime traces the dispatch, and that the kit's POSTs
// carry from their context, so a tool's own spans join the agent's trace.
const TraceparentHeader = "traceparent"

type traceparentKey struct{}

// WithTraceparent makes the POSTs made with ctx carry tp ("" changes
// nothing): the runtime sets the dispatch span's on an invocation.
func WithTraceparent(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return context.WithValue(ctx, traceparentKey{}, tp)
}

// traceparentOf is the traceparent a POST made with ctx carries: the one
// set with WithTraceparent, else that of the OpenTelemetry span in ctx.
func traceparentOf(ctx context.Context) string {
	if tp, ok := ctx.Value(traceparentKey{}).(string); ok {
		return tp
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c[TraceparentHeader]
}

// extractTrace returns ctx with the remote span context of an incoming
// request's traceparent (and tracestate) header, when it has a valid one.
func extractTrace(ctx context.Context, h http.Header) context.Context {
	if h.Get(TraceparentHeader) == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h))
}
