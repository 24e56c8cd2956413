package main

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentslice/agentslice/internal/otelx"
)

// discardTracing is the tracing -trace-ratio turns on: what serve runs
// with OTEL_TRACES_SAMPLER=parentbased_traceidratio (a batching span
// processor), into an exporter that discards, so the figure is the
// engine's and the SDK's cost without a collector's. Nil (off) for 0.
func discardTracing(ratio float64) *otelx.Tracing {
	if ratio <= 0 {
		return nil
	}
	return otelx.NewParentBased(sdktrace.WithBatcher(discardExporter{}),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))))
}

// discardExporter drops every span.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }
