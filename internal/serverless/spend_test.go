package serverless

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

type usageOnly struct{}

func (usageOnly) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	w.Text("hi")
	w.Usage(runtime.Usage{Input: 1000, Output: 100, Total: 1100})
	return nil
}

type nopWriter struct{ usage runtime.Usage }

func (*nopWriter) Text(string)                     {}
func (*nopWriter) Reasoning(string)                {}
func (*nopWriter) ToolCall(string, string, string) {}
func (w *nopWriter) Usage(u runtime.Usage)         { w.usage = u }

// Every completion's tokens and cost are EMF metrics with the agent and the
// model as dimensions, and the engine still gets the usage.
func TestSpendMetricsPerAgent(t *testing.T) {
	var buf bytes.Buffer
	cfg := &SliceConfig{Model: model.Config{Name: "claude", Provider: model.ProviderBedrock,
		Price: &model.Price{Input: 3, Output: 15}}}
	m := &spendMetrics{Model: usageOnly{}, name: "claude", prices: slicePricer{cfg: cfg},
		metrics: &lambdafn.Metrics{W: &buf}, log: slog.New(slog.DiscardHandler)}
	req := &runtime.CompletionRequest{ThreadID: "t1", Agent: "writer"}
	req.SetID("c1")
	w := &nopWriter{}
	if err := m.Complete(context.Background(), req, w); err != nil {
		t.Fatal(err)
	}
	if w.usage.Total != 1100 {
		t.Fatalf("the engine's writer got usage %+v", w.usage)
	}
	out := buf.String()
	for _, want := range []string{`"Agent":"writer"`, `"Model":"claude"`, `"CompletionTokens":1100`, `"CompletionCostUSD":0.0045`} {
		if !strings.Contains(out, want) {
			t.Fatalf("metrics %s lack %s", out, want)
		}
	}
}
