package stack

import (
	"strings"
	"testing"
)

// fullTelemetry is the full stack's OTEL_* settings.
var fullTelemetry = map[string]string{
	"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example.com:4318",
	"OTEL_TRACES_SAMPLER":         "parentbased_traceidratio",
	"OTEL_TRACES_SAMPLER_ARG":     "0.01",
}

// TestOptionalFeatures: tree budgets and the shared token bucket switch on
// in the slice function only when asked for (their grants are pinned by
// TestLeastPrivilege), and the OTEL_* settings reach every function as
// given; the default stack sets none of them (TestEnvironment's exact
// lists).
func TestOptionalFeatures(t *testing.T) {
	f := setup(t)
	s := f.full
	fns := map[string]obj{
		"slicefn":     envOf(t, f.fullJSON, s.Resolve(s.Slice.FunctionArn())),
		"rapreceiver": envOf(t, f.fullJSON, s.Resolve(s.Receiver.FunctionArn())),
		"delayrelay":  envOf(t, f.fullJSON, s.Resolve(s.Relay.FunctionArn())),
	}
	for name, env := range fns {
		for k, v := range fullTelemetry {
			if got := env[k]; got != v {
				t.Errorf("%s: %s = %v, want %q", name, k, got, v)
			}
		}
		for _, k := range []string{EnvTreeBudgets, EnvSharedTPM} {
			got, ok := env[k]
			if want := name == "slicefn"; ok != want || (ok && got != "on") {
				t.Errorf("%s: %s = %v (set: %v); want on in the slice function only", name, k, got, ok)
			}
		}
	}
	for name, env := range map[string]obj{
		"default slicefn":  envOf(t, f.defJSON, f.def.Resolve(f.def.Slice.FunctionArn())),
		"default receiver": envOf(t, f.defJSON, f.def.Resolve(f.def.Receiver.FunctionArn())),
		"default relay":    envOf(t, f.defJSON, f.def.Resolve(f.def.Relay.FunctionArn())),
	} {
		for k := range env {
			if strings.HasPrefix(k, "OTEL_") || k == EnvTreeBudgets || k == EnvSharedTPM {
				t.Errorf("%s: %s set by default", name, k)
			}
		}
	}
}

func TestTelemetryProps(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"OTEL_TRACES_SAMPLER": "always_on"}, ""},
		{map[string]string{"AWS_REGION": "x"}, `"AWS_REGION" is not an OTEL_* variable`},
		{map[string]string{"otel_traces_sampler": "x"}, `"otel_traces_sampler" is not an OTEL_* variable`},
		{map[string]string{"OTEL_TRACES_SAMPLER": ""}, "OTEL_TRACES_SAMPLER is empty"},
	} {
		err := checkTelemetry(c.vars)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), "Telemetry: "+c.want)) {
			t.Errorf("checkTelemetry(%v) = %v, want %q", c.vars, err, c.want)
		}
	}
	// The settings count against the slice function's 4 KB.
	big := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": strings.Repeat("x", 3000)}
	p := StackProps{Telemetry: big}
	if err := checkEnvBudget(strings.Repeat("c", 500), "", optionalEnv(&p), ""); err == nil {
		t.Error("3,000 bytes of OTEL_* settings and a 500-byte catalog fit the environment budget")
	}
}
