package otelx

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentslice/agentslice/internal/runtime"
)

// ScopeName is the instrumentation scope of the engine's spans.
const ScopeName = "github.com/agentslice/agentslice/internal/runtime"

// Tracing is a running OpenTelemetry tracer provider. A nil *Tracing is
// tracing off: every method is then a no-op and Tracer returns nil.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer *Tracer
}

// Setup builds tracing from the environment (FromEnv) for the service
// named service (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override
// it). It returns nil, nil when tracing is off. Spans are batched; call
// Flush before a Lambda handler returns and Shutdown on exit.
func Setup(ctx context.Context, service string, getenv func(string) string) (*Tracing, error) {
	cfg, err := FromEnv(getenv)
	if err != nil || !cfg.Enabled {
		return nil, err
	}
	var exp sdktrace.SpanExporter
	switch cfg.Protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx)
	default:
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("otelx: building the OTLP %s exporter: %w", cfg.Protocol, err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("otelx: reading OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	return New(sdktrace.WithBatcher(exp), sdktrace.WithSampler(cfg.Sampler), sdktrace.WithResource(res)), nil
}

// New returns tracing over a provider built with opts (tests pass a
// syncer to an in-memory exporter; the density benchmark a discarding
// one).
func New(opts ...sdktrace.TracerProviderOption) *Tracing {
	tp := sdktrace.NewTracerProvider(opts...)
	return &Tracing{tp: tp, tracer: &Tracer{t: tp.Tracer(ScopeName)}}
}

// Tracer is the engine's runtime.Tracer, nil when t is.
func (t *Tracing) Tracer() runtime.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

// Provider is the OpenTelemetry tracer provider (for other
// instrumentation), nil when t is.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.tp
}

// SetGlobal makes t the global tracer provider and W3C trace context the
// global propagator, so that libraries that trace with the global API
// (the RAP kit's tools, otelhttp) join the engine's traces.
func (t *Tracing) SetGlobal() {
	if t == nil {
		return
	}
	otel.SetTracerProvider(t.tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
}

// Flush exports the spans ended so far, within ctx's deadline.
func (t *Tracing) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Shutdown flushes and stops the provider.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Tracer implements runtime.Tracer with an OpenTelemetry tracer.
type Tracer struct{ t trace.Tracer }

// NewTracer returns a runtime.Tracer over t.
func NewTracer(t trace.Tracer) *Tracer { return &Tracer{t: t} }

// StartSlice starts a slice's span: a child of the first message of the
// batch that carries a trace context (so that a turn that waited days for
// a tool is one trace), linked to the others', a child of ctx's span when
// no message carries one.
func (t *Tracer) StartSlice(ctx context.Context, threadID string, batch []runtime.Message) (context.Context, runtime.Span) {
	var links []trace.Link
	parented := false
	for i := range batch {
		sc, ok := ParseTraceparent(batch[i].Trace)
		switch {
		case !ok:
		case !parented:
			ctx, parented = trace.ContextWithRemoteSpanContext(ctx, sc), true
		default:
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
	if len(links) > 0 {
		opts = append(opts, trace.WithLinks(links...))
	}
	ctx, sp := t.t.Start(ctx, runtime.SpanSlice, opts...)
	return ctx, wrap(sp)
}

// Start starts a child span of ctx's.
func (t *Tracer) Start(ctx context.Context, name string) (context.Context, runtime.Span) {
	ctx, sp := t.t.Start(ctx, name)
	return ctx, wrap(sp)
}

// Traceparent is the W3C traceparent of ctx's span ("" when none).
func (t *Tracer) Traceparent(ctx context.Context) string {
	return Traceparent(trace.SpanContextFromContext(ctx))
}

// Traceparent encodes sc as a W3C traceparent, "" when sc is not valid.
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	return string(b[:])
}

// ParseTraceparent decodes a W3C traceparent into a remote span context.
func ParseTraceparent(tp string) (trace.SpanContext, bool) {
	if tp == "" {
		return trace.SpanContext{}, false
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

// span adapts an OpenTelemetry span; a span that does not record (not
// sampled) takes no attributes.
type span struct {
	sp  trace.Span
	rec bool
}

func wrap(sp trace.Span) runtime.Span { return &span{sp: sp, rec: sp.IsRecording()} }

func (s *span) SetString(k, v string) {
	if s.rec {
		s.sp.SetAttributes(attribute.String(k, v))
	}
}

func (s *span) SetInt(k string, v int64) {
	if s.rec {
		s.sp.SetAttributes(attribute.Int64(k, v))
	}
}

func (s *span) SetStrings(k string, v []string) {
	if s.rec {
		s.sp.SetAttributes(attribute.StringSlice(k, v))
	}
}

func (s *span) End(err error) {
	if err != nil && s.rec {
		s.sp.RecordError(err)
		s.sp.SetStatus(codes.Error, err.Error())
	}
	s.sp.End()
}
