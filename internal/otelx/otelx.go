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
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithSampler(cfg.Sampler), sdktrace.WithResource(res)}
	if cfg.ParentBased() {
		return NewParentBased(opts...), nil
	}
	return New(opts...), nil
}

// New returns tracing over a provider built with opts (tests pass a
// syncer to an in-memory exporter; the density benchmark a discarding
// one).
func New(opts ...sdktrace.TracerProviderOption) *Tracing {
	tp := sdktrace.NewTracerProvider(opts...)
	return &Tracing{tp: tp, tracer: &Tracer{t: tp.Tracer(ScopeName)}}
}

// NewParentBased is New for a provider whose sampler is parent-based (the
// default, and every parentbased_ sampler): a slice whose message carries
// a trace that was not sampled then starts no span at all, its context
// carrying that trace on, which is what the SDK would decide at a higher
// cost (three allocations per slice instead of seven, at 1% sampling).
func NewParentBased(opts ...sdktrace.TracerProviderOption) *Tracing {
	t := New(opts...)
	t.tracer.parentBased = true
	return t
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
type Tracer struct {
	t trace.Tracer
	// parentBased: the sampler follows the parent's decision (see
	// NewParentBased).
	parentBased bool
}

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
			if t.parentBased && !sc.IsSampled() {
				return trace.ContextWithRemoteSpanContext(ctx, sc), unsampled{}
			}
			ctx, parented = trace.ContextWithRemoteSpanContext(ctx, sc), true
		default:
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	var ctxSp trace.Span
	if len(links) > 0 {
		ctx, ctxSp = t.t.Start(ctx, runtime.SpanSlice, consumer, trace.WithLinks(links...))
	} else {
		ctx, ctxSp = t.t.Start(ctx, runtime.SpanSlice, consumer)
	}
	sp := ctxSp
	if !sp.IsRecording() {
		// Not sampled: the context still carries the trace on (flags 00),
		// so that the turn's later slices are not sampled either.
		return ctx, unsampled{}
	}
	return ctx, &span{sp: sp}
}

// consumer is the slice span's kind: it consumes messages.
var consumer = trace.WithSpanKind(trace.SpanKindConsumer)

// Start starts a child span of ctx's. Under a span that is not sampled it
// starts none (nil: the engine then skips the phase's span altogether).
func (t *Tracer) Start(ctx context.Context, name string) (context.Context, runtime.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	ctx, sp := t.t.Start(ctx, name)
	return ctx, &span{sp: sp}
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

// ParseTraceparent decodes a W3C traceparent (version 00, or a later
// version's first four fields) into a remote span context, without
// allocating: it runs for every message of every traced slice.
func ParseTraceparent(tp string) (trace.SpanContext, bool) {
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' || tp[:2] == "ff" ||
		(len(tp) > 55 && (tp[:2] == "00" || tp[55] != '-')) {
		return trace.SpanContext{}, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	var flags [1]byte
	if !lowerHex(tp[:2]) || !lowerHex(tp[3:35]) || !lowerHex(tp[36:52]) || !lowerHex(tp[53:55]) {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(tid[:], []byte(tp[3:35])); err != nil {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(sid[:], []byte(tp[36:52])); err != nil {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(flags[:], []byte(tp[53:55])); err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}

// lowerHex reports whether s is lowercase hexadecimal digits only.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// span adapts a recording OpenTelemetry span.
type span struct{ sp trace.Span }

func (s *span) SetString(k, v string)           { s.sp.SetAttributes(attribute.String(k, v)) }
func (s *span) SetInt(k string, v int64)        { s.sp.SetAttributes(attribute.Int64(k, v)) }
func (s *span) SetStrings(k string, v []string) { s.sp.SetAttributes(attribute.StringSlice(k, v)) }

func (s *span) End(err error) {
	if err != nil {
		s.sp.RecordError(err)
		s.sp.SetStatus(codes.Error, err.Error())
	}
	s.sp.End()
}

// unsampled is the slice span of a trace that is not sampled: nothing to
// record or end (a span that does not record needs no End), and no
// allocation.
type unsampled struct{}

func (unsampled) SetString(string, string)    {}
func (unsampled) SetInt(string, int64)        {}
func (unsampled) SetStrings(string, []string) {}
func (unsampled) End(error)                   {}
