package serverless

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

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

type fakeBucket struct {
	wait  time.Duration
	taken int64
	given int64
}

func (b *fakeBucket) Take(_ context.Context, _ string, want int64) (time.Duration, error) {
	if b.wait > 0 {
		return b.wait, nil
	}
	b.taken += want
	return 0, nil
}

func (b *fakeBucket) Give(_ context.Context, _ string, n int64) error { b.given += n; return nil }

// A completion the shared bucket cannot cover fails with the bucket's wait
// as its Retry-After (the engine then waits through the timers); one it
// covers gives back what it did not use.
func TestSharedTPMWaitsAndGivesBack(t *testing.T) {
	b := &fakeBucket{wait: 40 * time.Second}
	m := &sharedTPM{Model: usageOnly{}, name: "claude", maxOutput: 2000, bucket: b, log: slog.New(slog.DiscardHandler)}
	req := &runtime.CompletionRequest{ThreadID: "t1", History: []runtime.Item{{Kind: runtime.ItemUser, Text: strings.Repeat("x", 400)}}}
	err := m.Complete(context.Background(), req, &nopWriter{})
	var ra runtime.RetryAfterError
	if !errors.As(err, &ra) || ra.RetryAfter() != 40*time.Second {
		t.Fatalf("err %v, want a Retry-After of 40s", err)
	}
	b.wait = 0
	if err := m.Complete(context.Background(), req, &nopWriter{}); err != nil {
		t.Fatal(err)
	}
	if b.taken != 2100 || b.given != 2100-1100 {
		t.Fatalf("took %d gave back %d, want 2100 and 1000", b.taken, b.given)
	}
}
