package otelx_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/otelx"
	"github.com/agentslice/agentslice/internal/runtime"
)

// usageModel replies with a fixed text and reports token usage.
type usageModel struct{}

func (usageModel) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	w.Text("hello")
	w.Usage(runtime.Usage{Input: 12, Output: 3, Total: 15})
	return nil
}

// TestOTLPHTTPExportEndToEnd: tracing built from the OTEL_* environment
// exports a slice's spans as OTLP/HTTP protobuf to a local receiver, which
// decodes them with the OTLP protobuf types: the service name, the slice
// span and its completion span with the GenAI attributes arrive.
func TestOTLPHTTPExportEndToEnd(t *testing.T) {
	got := make(chan *coltracepb.ExportTraceServiceRequest, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces application/x-protobuf", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- &req
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "otlp-e2e")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")

	ctx := context.Background()
	tracing, err := otelx.Setup(ctx, "agentslice-test", os.Getenv)
	if err != nil || tracing == nil {
		t.Fatalf("Setup: %v, %v", tracing, err)
	}
	e := &runtime.Engine{History: local.NewHistoryStore(), Queue: discardQueue{}, Model: usageModel{},
		Tools: runtime.NewToolbox(), Tracer: tracing.Tracer()}
	if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "thr_otlp",
		Messages: []runtime.Message{{V: 1, ID: "m1", ThreadID: "thr_otlp", Kind: runtime.KindUser, Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tracing.Shutdown(fctx); err != nil {
		t.Fatalf("flushing to the receiver: %v", err)
	}

	names := map[string]map[string]string{}
	service := ""
	for len(got) > 0 {
		req := <-got
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.Resource.Attributes {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					attrs := map[string]string{}
					for _, kv := range sp.Attributes {
						attrs[kv.Key] = strings.Trim(kv.Value.String(), " ")
					}
					names[sp.Name] = attrs
				}
			}
		}
	}
	if service != "otlp-e2e" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", service)
	}
	for _, n := range []string{runtime.SpanSlice, runtime.SpanLoad, runtime.SpanCompletion, runtime.SpanCommit, runtime.SpanSend} {
		if _, ok := names[n]; !ok {
			t.Errorf("no %q span reached the receiver (got %v)", n, names)
		}
	}
	chat := names[runtime.SpanCompletion]
	for k, want := range map[string]string{runtime.AttrGenAIOperation: `string_value:"chat"`,
		runtime.AttrGenAIInputTokens: "int_value:12", runtime.AttrGenAIOutputTokens: "int_value:3"} {
		if chat[k] != want {
			t.Errorf("completion span %s = %q, want %q", k, chat[k], want)
		}
	}
	if names[runtime.SpanSlice][runtime.AttrThread] != `string_value:"thr_otlp"` {
		t.Errorf("slice span attributes %v", names[runtime.SpanSlice])
	}
}

type discardQueue struct{}

func (discardQueue) Send(context.Context, ...runtime.Message) error { return nil }

func TestFromEnv(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		name    string
		getenv  func(string) string
		enabled bool
		proto   string
		err     string
	}{
		{"nothing set: off", env(), false, "", ""},
		{"an endpoint turns it on", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), true, otelx.ProtocolHTTP, ""},
		{"otlp over grpc", env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), true, otelx.ProtocolGRPC, ""},
		{"the traces protocol wins", env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"), true, otelx.ProtocolHTTP, ""},
		{"none", env("OTEL_TRACES_EXPORTER", "none", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"), false, "", ""},
		{"sdk disabled", env("OTEL_SDK_DISABLED", "true", "OTEL_TRACES_EXPORTER", "otlp"), false, "", ""},
		{"unknown exporter", env("OTEL_TRACES_EXPORTER", "zipkin"), false, "", "OTEL_TRACES_EXPORTER"},
		{"http/json", env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"), false, "", "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"bad sampler", env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_TRACES_SAMPLER", "sometimes"), false, "", "OTEL_TRACES_SAMPLER"},
		{"bad ratio", env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_TRACES_SAMPLER", "parentbased_traceidratio",
			"OTEL_TRACES_SAMPLER_ARG", "2"), false, "", "OTEL_TRACES_SAMPLER_ARG"},
		{"bad disabled", env("OTEL_SDK_DISABLED", "maybe"), false, "", "OTEL_SDK_DISABLED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := otelx.FromEnv(c.getenv)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil || cfg.Enabled != c.enabled || cfg.Protocol != c.proto {
				t.Fatalf("%+v, %v; want enabled=%v protocol %q", cfg, err, c.enabled, c.proto)
			}
			if cfg.Enabled && cfg.Sampler == nil {
				t.Fatal("no sampler")
			}
		})
	}
}

func TestTraceparentRoundTrip(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, ok := otelx.ParseTraceparent(tp)
	if !ok || otelx.Traceparent(sc) != tp {
		t.Fatalf("round trip of %s: %v %q", tp, ok, otelx.Traceparent(sc))
	}
	if _, ok := otelx.ParseTraceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"); ok {
		t.Fatal("an all-zero trace ID parsed")
	}
}
