// Package otelx turns the runtime's tracing hook (runtime.Tracer) into
// OpenTelemetry spans, and builds the OpenTelemetry SDK from the standard
// OTEL_* environment variables for serve and for every Lambda function.
//
// It owns: reading OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER,
// OTEL_EXPORTER_OTLP_PROTOCOL (and its _TRACES_ form), OTEL_TRACES_SAMPLER
// and OTEL_TRACES_SAMPLER_ARG into a Config, validated with errors naming
// the variable; the OTLP exporters (HTTP/protobuf and gRPC, which read
// their endpoint, headers and timeouts from the OTEL_EXPORTER_OTLP_*
// variables themselves); and the W3C traceparent encoding the runtime
// carries in messages and invocations.
//
// It must not be imported by internal/runtime (deps_test.go): the engine
// sees only runtime.Tracer. Tracing is off unless the environment turns
// it on, and off means Setup returns nil and the engine gets no Tracer.
package otelx
