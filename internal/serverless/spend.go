package serverless

import (
	"context"
	"log/slog"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The spend metrics: every completion's tokens and cost, with the agent
// and the model as dimensions, so a dashboard shows spend per agent.
const (
	MetricCompletionTokens = "CompletionTokens"
	MetricCompletionCost   = "CompletionCostUSD"
)

// slicePricer prices the function's models: the configured one for "" and
// the catalog's by name.
type slicePricer struct{ cfg *SliceConfig }

func (p slicePricer) Price(name string) (runtime.ModelPrice, bool) {
	if name == "" || name == p.cfg.Model.Name {
		return p.cfg.Model.ModelPrice()
	}
	if p.cfg.Catalog != nil {
		return p.cfg.Catalog.Price(name)
	}
	return runtime.ModelPrice{}, false
}

// spendMetrics is a model whose completions' usage is written as EMF
// metrics (MetricCompletionTokens, MetricCompletionCost) per agent.
type spendMetrics struct {
	runtime.Model
	name    string
	prices  runtime.Pricer
	metrics *lambdafn.Metrics
	log     *slog.Logger
}

// usageTap passes a completion on to the engine's writer and keeps its
// usage; it forwards reasoning blocks when the writer takes them.
type usageTap struct {
	runtime.TurnWriter
	usage runtime.Usage
	seen  bool
}

func (u *usageTap) Usage(x runtime.Usage) {
	u.usage, u.seen = x, true
	u.TurnWriter.Usage(x)
}

func (u *usageTap) ReasoningBlock(b runtime.ReasoningBlock) {
	if w, ok := u.TurnWriter.(runtime.ReasoningBlockWriter); ok {
		w.ReasoningBlock(b)
	}
}

func (m *spendMetrics) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	tap := &usageTap{TurnWriter: w}
	err := m.Model.Complete(ctx, req, tap)
	if err != nil || !tap.seen {
		return err
	}
	agent := req.Agent
	if agent == "" {
		agent = "-"
	}
	name := req.Model
	if name == "" {
		name = m.name
	}
	var cost float64
	if p, ok := m.prices.Price(req.Model); ok {
		cost = float64(p.Cost(tap.usage)) / 1e6
	}
	total := tap.usage.Total
	if total == 0 {
		total = tap.usage.Input + tap.usage.Output
	}
	if e := m.metrics.Emit(map[string]string{"Agent": agent, "Model": name},
		[]lambdafn.Metric{{Name: MetricCompletionTokens, Unit: "Count", Value: float64(total)},
			{Name: MetricCompletionCost, Unit: "None", Value: cost}},
		map[string]any{"thread": req.ThreadID, "completion": req.ID()}); e != nil {
		m.log.Warn("writing the spend metrics", "error", e)
	}
	return nil
}
