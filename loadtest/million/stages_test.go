package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The stage receiver reads what OpenTelemetry's own OTLP/HTTP exporter
// sends (as serve's would) and splits a wake-up into its stages: spans
// with set timestamps, under the traceparent the wake-up's POST carried,
// give each stage exactly.
func TestWakeStagesFromOTLP(t *testing.T) {
	r, err := startStages()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(r.url), otlptracehttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(ctx) }()
	tr := tp.Tracer("test")

	parent, traceID := newTraceparent()
	pctx := propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": parent})
	if got := trace.SpanContextFromContext(pctx).TraceID().String(); got != traceID {
		t.Fatalf("traceparent %s carries trace %s, want %s", parent, got, traceID)
	}
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	msAt := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	sctx, slice := tr.Start(pctx, "slice", trace.WithTimestamp(msAt(3)))
	for _, s := range []struct {
		name       string
		start, end int
	}{{"load", 3, 4}, {"chat", 4, 6}, {"commit", 9, 13}} {
		_, sp := tr.Start(sctx, s.name, trace.WithTimestamp(msAt(s.start)))
		sp.End(trace.WithTimestamp(msAt(s.end)))
	}
	slice.End(trace.WithTimestamp(msAt(13)))
	// Another trace, not a wake-up's: left out.
	_, other := tr.Start(ctx, "slice")
	other.End()
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	r.record(traceID, msAt(-2), msAt(0), msAt(18))
	st := r.breakdown(ctx, 0)
	want := map[string]float64{"post": 2, "queued": 3, "load": 1, "chat": 2, "commit": 4, "slice_other": 3, "between": 0, "deliver": 5, "total": 18}
	if st.Traced != 1 {
		t.Fatalf("%d wake-ups traced, want 1: %v", st.Traced, st)
	}
	for k, v := range want {
		if q := st.Stages[k]; q.P50 != v || q.P99 != v || q.Mean != v {
			t.Errorf("stage %s: %+v, want %v ms", k, q, v)
		}
	}
	if s := st.String(); !strings.Contains(s, "commit 4.00/4.00") {
		t.Errorf("summary %q", s)
	}
}
