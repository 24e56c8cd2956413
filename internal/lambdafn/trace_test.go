package lambdafn

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentslice/agentslice/internal/otelx"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
)

// batchedTracing exports only when flushed (an hour's batch timeout), as
// a Lambda's would between invocations: a span the handler did not flush
// before returning is not in the exporter.
func batchedTracing(t *testing.T) (*otelx.Tracing, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tr := otelx.NewParentBased(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Hour)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return tr, exp
}

type sentQueue struct {
	mu   sync.Mutex
	msgs []runtime.Message
}

func (q *sentQueue) Send(_ context.Context, msgs ...runtime.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, msgs...)
	return nil
}

const (
	sampledParent   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	unsampledParent = "00-4bf92f3577b34da6a3ce929d0e0e4737-00f067aa0ba902b8-00"
)

// checkChild: exactly one span named name was exported, a child of
// parent, and the message passed on carries the span's context.
func checkChild(t *testing.T, exp *tracetest.InMemoryExporter, name, parent string, sent []runtime.Message) {
	t.Helper()
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != name {
		t.Fatalf("exported %d spans (%v) when the handler returned, want one %s", len(spans), spans, name)
	}
	sp := spans[0]
	psc, _ := otelx.ParseTraceparent(parent)
	if sp.Parent.SpanID() != psc.SpanID() || sp.SpanContext.TraceID() != psc.TraceID() {
		t.Errorf("%s: parent %s in trace %s, want %s in %s", name, sp.Parent.SpanID(), sp.SpanContext.TraceID(), psc.SpanID(), psc.TraceID())
	}
	if len(sent) != 1 || sent[0].Trace != otelx.Traceparent(sp.SpanContext) {
		t.Errorf("passed on %+v, want one message carrying %s", sent, otelx.Traceparent(sp.SpanContext))
	}
}

func TestReceiverSpanJoinsTheSignedTrace(t *testing.T) {
	keys, err := rap.ParseKeyring("k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", 32))))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/function_url_request.json")
	if err != nil {
		t.Fatal(err)
	}
	signer := &rap.Signer{Keys: keys, BaseURL: "https://abc.lambda-url.us-east-1.on.aws/callback"}
	for _, c := range []struct {
		name, trace string
		span        bool
	}{
		{"sampled", sampledParent, true},
		{"not sampled", unsampledParent, false},
		{"not traced", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, exp := batchedTracing(t)
			q := &sentQueue{}
			rc, err := rap.NewReceiver(ReceiverFor(keys, q, Options{Logger: raptest.QuietLogger(), Tracing: tr}))
			if err != nil {
				t.Fatal(err)
			}
			signed, err := signer.InvocationCallbackURL(runtime.Invocation{ThreadID: "thread-1", CallID: "call-1", Trace: c.trace})
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(signed)
			var req events.LambdaFunctionURLRequest
			if err := json.Unmarshal(raw, &req); err != nil {
				t.Fatal(err)
			}
			req.RawQueryString = u.RawQuery
			resp, err := WithFlush(FunctionURLHandler(rc, raptest.QuietLogger()), tr)(context.Background(), req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("response %d %q, %v", resp.StatusCode, resp.Body, err)
			}
			if c.span {
				checkChild(t, exp, SpanCallback, c.trace, q.msgs)
				return
			}
			if n := len(exp.GetSpans()); n != 0 || len(q.msgs) != 1 || q.msgs[0].Trace != c.trace {
				t.Errorf("%d spans exported, passed on %+v; want none, and the message's trace context %q unchanged", n, q.msgs, c.trace)
			}
		})
	}
}

func TestRelaySpanJoinsTheSleepsTrace(t *testing.T) {
	tr, exp := batchedTracing(t)
	q := &sentQueue{}
	body, err := runtime.EncodeMessage(runtime.Message{V: 1, ID: "wake-1", ThreadID: "thread-1", Kind: runtime.KindWake,
		ToolCallID: "call-1", Trace: sampledParent})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := runtime.EncodeMessage(runtime.Message{V: 1, ID: "wake-2", ThreadID: "thread-2", Kind: runtime.KindWake, ToolCallID: "call-2"})
	if err != nil {
		t.Fatal(err)
	}
	h := WithFlush(RelayHandler(traceQueue(q, tr, SpanRelay), raptest.QuietLogger()), tr)
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "r1", Body: string(body)}, {MessageId: "r2", Body: string(plain)}}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("relay: %+v, %v", resp, err)
	}
	if len(q.msgs) != 2 || q.msgs[1].Trace != "" {
		t.Fatalf("relayed %+v, want both wake-ups, the second without a trace context", q.msgs)
	}
	checkChild(t, exp, SpanRelay, sampledParent, q.msgs[:1])
}
