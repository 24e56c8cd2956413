package serverless

import (
	"context"
	"fmt"
	"log/slog"
	"time"

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

// sharedTPM is a model whose completions take their tokens from the
// deployment's shared bucket (dedup.TokenBucket) first: a completion the
// bucket cannot cover now fails with the wait as its Retry-After, so the
// thread waits through the timers (runtime.ProviderWait) at no cost
// instead of meeting the provider's 429. A completion takes its estimate
// (a quarter token per byte of its request, and the model's whole output)
// and gives back what it did not use.
type sharedTPM struct {
	runtime.Model
	name      string
	maxOutput int
	bucket    interface {
		Take(ctx context.Context, model string, want int64) (time.Duration, error)
		Give(ctx context.Context, model string, tokens int64) error
	}
	log *slog.Logger
}

// bucketWait is the error of a completion the shared bucket put off.
type bucketWait struct{ after time.Duration }

func (e *bucketWait) Error() string {
	return fmt.Sprintf("the shared tokens-per-minute budget is spent; retry in %v", e.after)
}
func (e *bucketWait) RetryAfter() time.Duration { return e.after }

func (m *sharedTPM) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	bytes := len(req.System)
	for i := range req.History {
		it := &req.History[i]
		bytes += len(it.Text) + len(it.Args)
	}
	est := int64(bytes/4 + m.maxOutput)
	wait, err := m.bucket.Take(ctx, m.name, est)
	if err != nil {
		m.log.Warn("the shared token bucket is unavailable; calling the model anyway", "model", m.name, "error", err)
		return m.Model.Complete(ctx, req, w)
	}
	if wait > 0 {
		return &bucketWait{after: wait}
	}
	tap := &usageTap{TurnWriter: w}
	err = m.Model.Complete(ctx, req, tap)
	used := int64(tap.usage.Total)
	if !tap.seen {
		used = est
	}
	if gerr := m.bucket.Give(context.WithoutCancel(ctx), m.name, est-used); gerr != nil {
		m.log.Warn("giving back to the shared token bucket", "model", m.name, "error", gerr)
	}
	return err
}
