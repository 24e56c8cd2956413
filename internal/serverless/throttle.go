package serverless

import (
	"context"
	"log/slog"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// throttleCounter is a model whose throttling errors (model.IsThrottled)
// are counted as the ModelThrottles metric with the model's name as the
// Model dimension, so a dashboard shows throttles per model. The engine
// still retries them; the event sources' MaximumConcurrency per class is
// what keeps a burst from reaching the provider in the first place.
type throttleCounter struct {
	runtime.Model
	name    string
	metrics *lambdafn.Metrics
	log     *slog.Logger
}

// MetricModelThrottles is the metric counting throttled model calls.
const MetricModelThrottles = "ModelThrottles"

func (m *throttleCounter) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	err := m.Model.Complete(ctx, req, w)
	if err != nil && model.IsThrottled(err) {
		if e := m.metrics.Emit(map[string]string{"Model": m.name},
			[]lambdafn.Metric{{Name: MetricModelThrottles, Unit: "Count", Value: 1}},
			map[string]any{"thread": req.ThreadID, "completion": req.ID()}); e != nil {
			m.log.Warn("writing the throttle metric", "error", e)
		}
	}
	return err
}
