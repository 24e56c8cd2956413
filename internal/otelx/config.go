package otelx

import (
	"fmt"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The protocols an OTLP exporter speaks.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config is what the environment says about tracing.
type Config struct {
	// Enabled is whether spans are exported at all.
	Enabled bool
	// Protocol is ProtocolHTTP or ProtocolGRPC.
	Protocol string
	// Sampler decides which traces are kept.
	Sampler sdktrace.Sampler
	// SamplerName is OTEL_TRACES_SAMPLER as read (for logs).
	SamplerName string
}

// ParentBased reports whether the sampler follows a parent's decision.
func (c Config) ParentBased() bool {
	return c.SamplerName == "" || strings.HasPrefix(c.SamplerName, "parentbased_")
}

// FromEnv reads the tracing configuration. Tracing is on when
// OTEL_TRACES_EXPORTER is "otlp", or when it is unset and an OTLP endpoint
// is (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
// OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true turn it off. The
// default (nothing set) is off. A value this package does not support is an
// error naming the variable.
func FromEnv(getenv func(string) string) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	var c Config
	if v := get("OTEL_SDK_DISABLED"); v != "" {
		off, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("otelx: OTEL_SDK_DISABLED=%q: want true or false", v)
		}
		if off {
			return c, nil
		}
	}
	switch exp := strings.ToLower(get("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return c, nil
	case "otlp":
		c.Enabled = true
	case "":
		c.Enabled = get("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return c, fmt.Errorf("otelx: OTEL_TRACES_EXPORTER=%q: this build exports traces with otlp only (or none)", exp)
	}
	if !c.Enabled {
		return c, nil
	}
	name, proto := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		name, proto = "OTEL_EXPORTER_OTLP_PROTOCOL", get("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", ProtocolHTTP:
		c.Protocol = ProtocolHTTP
	case ProtocolGRPC:
		c.Protocol = ProtocolGRPC
	default:
		return c, fmt.Errorf("otelx: %s=%q: want %s or %s", name, proto, ProtocolHTTP, ProtocolGRPC)
	}
	var err error
	c.SamplerName = get("OTEL_TRACES_SAMPLER")
	if c.Sampler, err = sampler(c.SamplerName, get("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		return c, err
	}
	return c, nil
}

// sampler is the sampler OTEL_TRACES_SAMPLER names (default
// parentbased_always_on), with OTEL_TRACES_SAMPLER_ARG as the ratio of the
// traceidratio samplers (default 1).
func sampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := 1.0
	if arg != "" && strings.HasSuffix(name, "traceidratio") {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("otelx: OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
		}
		ratio = r
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), nil
	}
	return nil, fmt.Errorf("otelx: OTEL_TRACES_SAMPLER=%q: want always_on, always_off, traceidratio or their parentbased_ forms", name)
}
