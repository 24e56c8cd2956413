package serverless_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/otelx"
	"github.com/agentslice/agentslice/internal/otelx/otelxtest"
	"github.com/agentslice/agentslice/internal/runtime"
)

// tracingRunner is a slice that starts and ends a span, as the engine does.
type tracingRunner struct {
	fakeRunner
	tracer runtime.Tracer
}

func (r *tracingRunner) RunSlice(ctx context.Context, in runtime.SliceInput) (*runtime.SliceResult, error) {
	_, sp := r.tracer.StartSlice(ctx, in.ThreadID, in.Messages)
	sp.End(nil)
	return r.fakeRunner.RunSlice(ctx, in)
}

// The spans of a batch are exported before Handle returns (Lambda freezes
// the environment then), although the span processor batches: without the
// flush they would wait for its 5 s schedule or the next invocation.
func TestHandleFlushesTheBatchSpans(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tracing := otelx.New(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Hour)))
	defer func() { _ = tracing.Shutdown(context.Background()) }()
	var out bytes.Buffer
	h := newHandler(&fakeRunner{}, &fakeDLQ{}, &out)
	h.Slices, h.Flusher = &tracingRunner{tracer: tracing.Tracer()}, tracing
	if _, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{userRec("s1", "t1", "m1"), userRec("s2", "t2", "m2")}}); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 2 {
		t.Fatalf("%d spans exported when Handle returned, want the batch's 2", n)
	}
}

// deadlineFlusher records the deadline its flush was given.
type deadlineFlusher struct{ got chan time.Time }

func (f *deadlineFlusher) Flush(ctx context.Context) error {
	dl, _ := ctx.Deadline()
	f.got <- dl
	return nil
}

// The flush keeps half the margin free before the invocation deadline.
func TestHandleFlushIsBoundedByHalfTheMargin(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := newHandler(&fakeRunner{}, &fakeDLQ{}, &out)
	f := &deadlineFlusher{got: make(chan time.Time, 1)}
	h.Flusher, h.Margin = f, 3*time.Second
	invocation := time.Now().Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), invocation)
	defer cancel()
	if _, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{userRec("s1", "t1", "m1")}}); err != nil {
		t.Fatal(err)
	}
	if got := waitCh(t, f.got); !got.Equal(invocation.Add(-h.Margin / 2)) {
		t.Fatalf("flush deadline %v, want the invocation's %v less half the margin", got, invocation)
	}
}

// TestSliceFunctionTracesAToolTurn: on the serverless wiring (real SQS
// stand-in, the receiver behind its function URL, a RAP kit tool), a turn
// with a tool call is one trace: the slice the callback's SQS message
// wakes is a child of the receiver's span (lambdafn.SpanCallback), itself a
// child of the dispatch span of the slice that called the tool,
// and the kit tool's context carried the trace (its result came back with
// it through the signed callback URL and the queue).
func TestSliceFunctionTracesAToolTurn(t *testing.T) {
	rec := otelxtest.New()
	p := startInProcessTraced(t, rec.Tracing)
	thread := "tool-traced-" + time.Now().Format("150405.000")
	p.send(t, thread, "m1", "what time is it?")
	if got := p.replies(t, thread, 1); got[0] != "reply: The clock answered." {
		t.Fatalf("tool turn replied %q", got)
	}
	// The reply goes out before its slice ends (the dedup mark follows).
	if !rec.WaitSlices(thread, 2, 30*time.Second) {
		t.Fatalf("%d slice spans of %s ended, want 2", rec.Ended(thread), thread)
	}
	var ss tracetest.SpanStubs
	for _, s := range otelxtest.Find(rec.Spans(), runtime.SpanSlice) {
		if otelxtest.Attr(s, runtime.AttrThread) == thread && otelxtest.Attr(s, runtime.AttrOutcome) != "nothing" {
			ss = append(ss, s)
		}
	}
	spans := rec.Spans()
	if len(ss) != 2 {
		t.Fatalf("%d slice spans of %s, want 2:\n%s", len(ss), thread, otelxtest.Tree(spans))
	}
	first, second := ss[0], ss[1]
	if second.StartTime.Before(first.StartTime) {
		first, second = second, first
	}
	// The resumed slice hangs under the receiver's span, which hangs
	// under the dispatch.
	cb, ok := otelxtest.ByID(spans, second.Parent.SpanID())
	if !ok || cb.Name != lambdafn.SpanCallback || second.SpanContext.TraceID() != first.SpanContext.TraceID() {
		t.Fatalf("the resumed slice hangs under %q in trace %s, want the receiver's %s in %s:\n%s", cb.Name,
			second.SpanContext.TraceID(), lambdafn.SpanCallback, first.SpanContext.TraceID(), otelxtest.Tree(spans))
	}
	if d, ok := otelxtest.ByID(spans, cb.Parent.SpanID()); !ok || d.Name != runtime.SpanDispatch {
		t.Fatalf("the receiver's span hangs under %q, want the dispatch:\n%s", d.Name, otelxtest.Tree(spans))
	}
	t.Logf("span tree on the serverless wiring:\n%s", otelxtest.Tree(spans))
}
