package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// errThrottled is what the simulated provider answers a call over its
// limits with (Bedrock's ThrottlingException, OpenAI's 429).
var errThrottled = errors.New("provider: throttled (too many concurrent requests or tokens per minute)")

// provider is a simulated model provider with a realistic latency and a
// provider-style rate limit: at most concurrency calls in flight, and a
// tokens-per-minute quota kept as a token bucket that holds one minute's
// tokens and refills continuously. A call over either limit fails at once
// with errThrottled and is counted; the engine retries it with backoff.
type provider struct {
	latency     time.Duration // median
	jitter      time.Duration // latency spread, ± jitter/2, fixed per completion ID
	concurrency int
	tpm         float64
	tokens      int // input + output tokens of every call

	mu        sync.Mutex
	inFlight  int
	bucket    float64
	last      time.Time
	throttles atomic.Int64
	calls     atomic.Int64
}

func newProvider(latency, jitter time.Duration, concurrency, tpm, tokens int) *provider {
	return &provider{latency: latency, jitter: jitter, concurrency: concurrency, tpm: float64(tpm), tokens: tokens,
		bucket: float64(tpm), last: time.Now()}
}

func (p *provider) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	p.mu.Lock()
	now := time.Now()
	p.bucket = min(p.tpm, p.bucket+now.Sub(p.last).Minutes()*p.tpm)
	p.last = now
	if p.inFlight >= p.concurrency || p.bucket < float64(p.tokens) {
		p.mu.Unlock()
		p.throttles.Add(1)
		return fmt.Errorf("completion %s: %w", req.ID(), errThrottled)
	}
	p.inFlight++
	p.bucket -= float64(p.tokens)
	p.mu.Unlock()
	p.calls.Add(1)
	defer func() {
		p.mu.Lock()
		p.inFlight--
		p.mu.Unlock()
	}()
	h := fnv.New64a()
	h.Write([]byte(req.ID()))
	d := p.latency - p.jitter/2 + time.Duration(h.Sum64()%uint64(p.jitter+1))
	t := time.NewTimer(d)
	select {
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	case <-t.C:
	}
	w.Text("Done: the report is ready and the numbers match the previous run.")
	w.Usage(runtime.Usage{Input: p.tokens - 100, Output: 100, Total: p.tokens})
	return nil
}
