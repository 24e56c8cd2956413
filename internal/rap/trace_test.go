package rap

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A traced dispatch reaches a kit tool as the traceparent header: the
// span the tool starts from Run's context joins the dispatch's trace as
// its child, and the result the tool posts comes back as a message that
// carries the dispatch's traceparent (signed into the callback URL).
func TestKitToolSpansJoinTheDispatchTrace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tool := Tool{Name: "traced", Description: "Starts a span of its own.",
		Run: func(ctx context.Context, c *Call) error {
			_, sp := tp.Tracer("tool").Start(ctx, "tool work")
			sp.End()
			return c.Result(ctx, "traced")
		}}
	rig := newToolRig(t, tool)
	th := rootThread("thr_trace")
	ts, err := rig.loader.Toolset(context.Background(), th)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := ts.Lookup("traced")
	if !ok {
		t.Fatal("tool not offered")
	}
	const dispatch = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if err := e.Async.Dispatch(context.Background(), runtimeInvocation(th.ID, "call_t1", "traced", dispatch)); err != nil {
		t.Fatal(err)
	}
	m := rig.q.next(t)
	if m.Trace != dispatch || m.Text != "traced" {
		t.Fatalf("result message %+v: want the dispatch's traceparent %s", m, dispatch)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d tool spans, want 1", len(spans))
	}
	sp := spans[0]
	if sp.SpanContext.TraceID().String() != dispatch[3:35] || sp.Parent.SpanID().String() != dispatch[36:52] || !sp.Parent.IsRemote() {
		t.Fatalf("the tool's span is in trace %s under %s, want trace %s under the dispatch %s",
			sp.SpanContext.TraceID(), sp.Parent.SpanID(), dispatch[3:35], dispatch[36:52])
	}
}

func runtimeInvocation(thread, call, name, trace string) runtime.Invocation {
	return runtime.Invocation{ThreadID: thread, CallID: call, Name: name, Args: "{}", Trace: trace}
}
