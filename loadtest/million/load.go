package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// background keeps a set of agents busy: each sends a message, waits for
// its reply, and sends the next, the whole set at most rate messages a
// second (0: as fast as serve answers). It counts replies.
type background struct {
	a       *api
	agents  []string
	rate    float64
	seq     atomic.Int64
	replies atomic.Int64
	errs    atomic.Int64
	// accepted are messages serve accepted whose reply has not come
	// (the kill test checks them after the restart).
	mu       sync.Mutex
	accepted map[string]string // message ID -> thread
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	lastErr  atomic.Value
}

func startBackground(ctx context.Context, a *api, agents []string, rate float64, tag string) *background {
	b := &background{a: a, agents: agents, rate: rate, accepted: map[string]string{}}
	ctx, b.cancel = context.WithCancel(ctx)
	var tokens chan struct{}
	if rate > 0 {
		tokens = make(chan struct{}, 64)
		b.wg.Add(1)
		go func() { // the rate's ticker; stopped by cancel
			defer b.wg.Done()
			const tick = 5 * time.Millisecond
			t := time.NewTicker(tick)
			defer t.Stop()
			owed := 0.0
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					owed += rate * tick.Seconds()
					for ; owed >= 1; owed-- {
						select {
						case tokens <- struct{}{}:
						default: // behind: the load is open loop up to the buffer
						}
					}
				}
			}
		}()
	}
	for _, agent := range agents {
		b.wg.Add(1)
		go func() { // one user; stopped by cancel
			defer b.wg.Done()
			for n := 0; ; n++ {
				if tokens != nil {
					select {
					case <-ctx.Done():
						return
					case <-tokens:
					}
				}
				if ctx.Err() != nil {
					return
				}
				id := fmt.Sprintf("bg-%s-%s-%d", runTag, tag, b.seq.Add(1))
				ch := a.wait(agent)
				if err := a.post(ctx, agent, id, "Background message "+strconv.Itoa(n)+": check the build again."); err != nil {
					a.unwait(agent)
					if ctx.Err() == nil {
						b.errs.Add(1)
						b.lastErr.Store(err.Error())
					}
					return
				}
				b.mu.Lock()
				b.accepted[id] = agent
				b.mu.Unlock()
				select {
				case <-ch:
					b.replies.Add(1)
					b.mu.Lock()
					delete(b.accepted, id)
					b.mu.Unlock()
				case <-ctx.Done():
					return
				case <-time.After(time.Minute):
					b.errs.Add(1)
					b.lastErr.Store("no reply in a minute to " + id)
					return
				}
			}
		}()
	}
	return b
}

func (b *background) stop() map[string]string {
	b.cancel()
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.accepted
}

// throughput measures serve's durable rate: replies per second with
// every agent of the set posting as fast as it is answered.
func throughput(ctx context.Context, a *api, agents []string, d time.Duration, tag string) (float64, error) {
	b := startBackground(ctx, a, agents, 0, "sat"+tag)
	time.Sleep(2 * time.Second) // warm up: the set's threads loaded
	r0, t0 := b.replies.Load(), time.Now()
	time.Sleep(d)
	rate := float64(b.replies.Load()-r0) / time.Since(t0).Seconds()
	b.stop()
	if n := b.errs.Load(); n > 0 {
		return rate, fmt.Errorf("throughput: %d errors; last: %v", n, b.lastErr.Load())
	}
	return rate, nil
}

// wakeStats are wake-up latencies: from serve's 202 for the message to
// the reply event, and the simulated model's own time in it.
type wakeStats struct {
	N       int     `json:"n"`
	P50     float64 `json:"p50_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
	PostP50 float64 `json:"post_p50_ms"` // the POST itself (its durable accept)
	PostP99 float64 `json:"post_p99_ms"`
	ModelMS float64 `json:"model_mean_ms"` // the simulated completion's own time (item took)
	Errors  int     `json:"errors"`
}

// wake sends one message to each of agents (idle, chosen at random by the
// caller), at most concurrency at a time, spaced to rate a second, and
// times each from the accepted POST to its reply.
func wake(ctx context.Context, a *api, agents []string, rate float64, concurrency int, tag string) wakeStats {
	lat := make([]float64, len(agents))
	post := make([]float64, len(agents))
	var errs atomic.Int64
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	gap := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	for i, agent := range agents {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		next = next.Add(gap)
		sem <- struct{}{}
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			defer func() { <-sem }()
			ch := a.wait(agent)
			pctx, traceID := ctx, ""
			if a.stages != nil {
				var tp string
				tp, traceID = newTraceparent()
				pctx = withTraceparent(ctx, tp)
			}
			t0 := time.Now()
			if err := a.post(pctx, agent, fmt.Sprintf("wake-%s-%s-%d", runTag, tag, i), "Wake up: the CI run you waited for finished."); err != nil {
				a.unwait(agent)
				errs.Add(1)
				lat[i], post[i] = -1, -1
				return
			}
			t1 := time.Now()
			select {
			case t2 := <-ch:
				lat[i], post[i] = ms(t2.Sub(t1)), ms(t1.Sub(t0))
				if a.stages != nil {
					a.stages.record(traceID, t0, t1, t2)
				}
			case <-time.After(time.Minute):
				a.unwait(agent)
				errs.Add(1)
				lat[i], post[i] = -1, -1
			}
		}()
	}
	wg.Wait()
	st := wakeStats{N: len(agents), Errors: int(errs.Load())}
	st.P50, st.P99, st.Max = percentiles(lat)
	st.PostP50, st.PostP99, _ = percentiles(post)
	st.ModelMS = modelTime(ctx, a, agents[:min(len(agents), 200)])
	return st
}

// modelTime is the mean time of the completions that answered the
// agents' last messages, as their assistant items record it (took, ms).
func modelTime(ctx context.Context, a *api, agents []string) float64 {
	var sum float64
	n := 0
	for _, agent := range agents {
		items, _, err := a.history(ctx, agent, 0)
		if err != nil {
			continue
		}
		for i := len(items) - 1; i >= 0; i-- {
			if items[i].Kind == "assistant" {
				sum += float64(items[i].Took)
				n++
				break
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func percentiles(xs []float64) (p50, p99, maxv float64) {
	var ok []float64
	for _, x := range xs {
		if x >= 0 {
			ok = append(ok, x)
		}
	}
	if len(ok) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ok)
	return quantile(ok, 0.50), quantile(ok, 0.99), ok[len(ok)-1]
}

// quantile is xs's q quantile the way every figure here picks it: the
// value at index q*len of xs sorted (xs is sorted in place; not empty).
func quantile(xs []float64, q float64) float64 {
	if !slices.IsSorted(xs) {
		slices.Sort(xs)
	}
	return xs[min(len(xs)-1, int(q*float64(len(xs))))]
}

// pick returns n distinct indexes of [lo, hi) at random.
func pick(rng *rand.Rand, lo, hi, n int, taken map[int]bool) []int {
	var out []int
	for len(out) < n && len(taken) < hi-lo {
		i := lo + rng.IntN(hi-lo)
		if !taken[i] {
			taken[i] = true
			out = append(out, i)
		}
	}
	return out
}
