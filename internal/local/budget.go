package local

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Budget bounds the calls to one model so that the provider's limits are
// not hit in the first place: at most Concurrency calls at once and
// TokensPerMinute tokens a minute. A call that does not fit waits (it is
// not sent and retried); waiting calls are admitted by class with the
// scheduler's guaranteed-share rule, so an interactive slice's call goes
// before a background flood's without starving it.
//
// Tokens are counted as a token bucket holding at most one minute's
// tokens and refilled continuously, as providers describe their own
// limits. A call takes its estimated cost when it is admitted (the average
// cost of the calls so far, EstimateTokens before any) and the difference
// to its reported usage when it ends. Set TokensPerMinute a little below
// the provider's quota: the estimate can be short by one call's worth per
// call in flight.
type Budget struct {
	// Concurrency is the most calls in flight; 0 means no bound.
	Concurrency int
	// TokensPerMinute is the most tokens (input + output, as the usage
	// reports them) per minute; 0 means no bound.
	TokensPerMinute int
	// EstimateTokens is the assumed cost of a call before any call has
	// reported usage. Default 1000.
	EstimateTokens int
	// Share is background's share of the admissions while both classes
	// wait. Default: SchedulerConfig.BackgroundShare.
	Share float64
	// FIFO admits calls in arrival order whatever their class.
	FIFO bool
	// Now is the clock the bucket refills by; default time.Now.
	Now func() time.Time
}

func (b *Budget) validate() error {
	switch {
	case b.Concurrency < 0:
		return fmt.Errorf("local: Budget.Concurrency is %d; want 0 (no bound) or more", b.Concurrency)
	case b.TokensPerMinute < 0:
		return fmt.Errorf("local: Budget.TokensPerMinute is %d; want 0 (no bound) or more", b.TokensPerMinute)
	case b.EstimateTokens < 0:
		return fmt.Errorf("local: Budget.EstimateTokens is %d; want 0 (default) or more", b.EstimateTokens)
	case b.Share < 0 || b.Share >= 1:
		return fmt.Errorf("local: Budget.Share is %v; want 0 (default) or a fraction in (0, 1)", b.Share)
	case b.TokensPerMinute > 0 && b.EstimateTokens > b.TokensPerMinute:
		return fmt.Errorf("local: Budget.EstimateTokens %d exceeds TokensPerMinute %d: no call could ever start", b.EstimateTokens, b.TokensPerMinute)
	}
	return nil
}

// Budgeted returns m bounded by b. The class of each call is the class of
// the slice making it (the System passes it in the context; interactive
// when called from elsewhere). Close stops its refill timer.
func Budgeted(m runtime.Model, b Budget) (*BudgetedModel, error) {
	if err := b.validate(); err != nil {
		return nil, err
	}
	if b.EstimateTokens == 0 {
		b.EstimateTokens = 1000
	}
	if b.Share == 0 {
		b.Share = 0.2
	}
	if b.Now == nil {
		b.Now = time.Now
	}
	capacity := b.Concurrency
	if capacity == 0 {
		capacity = int(^uint(0) >> 2)
	}
	g := &BudgetedModel{Model: m, b: b, avail: float64(b.TokensPerMinute), last: b.Now(),
		pick: picker{fifo: b.FIFO, capacity: capacity, share: b.Share}}
	return g, nil
}

// BudgetedModel is a runtime.Model whose calls wait for their Budget.
type BudgetedModel struct {
	runtime.Model
	b Budget

	mu      sync.Mutex
	pick    picker
	waiters [2]fifoQueue[*budgetWaiter]
	seq     uint64
	avail   float64 // tokens in the bucket; negative after underestimates
	last    time.Time
	costSum float64
	costN   int
	timer   *time.Timer
	closed  bool
	stats   BudgetStats
	onWait  func() // tests: called (without the lock) when a call starts waiting
}

// BudgetStats counts what a BudgetedModel did.
type BudgetStats struct {
	Calls       int64 // calls admitted
	Waited      int64 // of them, calls that had to wait
	MaxInFlight int   // most calls in flight at once
}

type budgetWaiter struct {
	ready chan struct{}
	class int
	cost  float64
	seq   uint64
	gone  bool // cancelled while waiting
}

// Complete waits for room in the budget, then calls the model.
func (g *BudgetedModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	c := classFrom(ctx)
	cost, err := g.acquire(ctx, c)
	if err != nil {
		return fmt.Errorf("local: waiting for the model's budget for thread %s: %w", req.ThreadID, err)
	}
	uw := &usageWriter{TurnWriter: w}
	err = g.Model.Complete(ctx, req, uw)
	g.release(c, cost, uw.total())
	return err
}

// Stats returns the counts so far.
func (g *BudgetedModel) Stats() BudgetStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// Close stops the refill timer. Calls still waiting stay until their
// contexts end.
func (g *BudgetedModel) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.timer != nil {
		g.timer.Stop()
	}
}

func (g *BudgetedModel) estimate() float64 {
	if g.costN == 0 {
		return float64(g.b.EstimateTokens)
	}
	return g.costSum / float64(g.costN)
}

func (g *BudgetedModel) acquire(ctx context.Context, c int) (float64, error) {
	g.mu.Lock()
	g.seq++
	w := &budgetWaiter{ready: make(chan struct{}), class: c, seq: g.seq}
	if g.b.TokensPerMinute > 0 {
		w.cost = min(g.estimate(), float64(g.b.TokensPerMinute))
	}
	g.waiters[c].push(w)
	g.admit()
	g.mu.Unlock()
	select {
	case <-w.ready:
		return w.cost, nil
	default:
	}
	g.mu.Lock()
	g.stats.Waited++
	onWait := g.onWait
	g.mu.Unlock()
	if onWait != nil {
		onWait()
	}
	select {
	case <-w.ready:
		return w.cost, nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-w.ready: // admitted meanwhile: give it back
			g.pick.running[c]--
			g.avail += w.cost
			g.admit()
		default:
			w.gone = true
		}
		return 0, ctx.Err()
	}
}

func (g *BudgetedModel) release(c int, cost float64, used int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pick.running[c]--
	if g.b.TokensPerMinute > 0 && used > 0 {
		g.avail += cost - float64(used)
		g.costSum += float64(used)
		g.costN++
	}
	g.admit()
}

// refill adds the tokens earned since the last refill.
func (g *BudgetedModel) refill() {
	now := g.b.Now()
	if g.b.TokensPerMinute > 0 {
		perMin := float64(g.b.TokensPerMinute)
		g.avail = min(perMin, g.avail+now.Sub(g.last).Minutes()*perMin)
	}
	g.last = now
}

// admit lets waiting calls in while they fit. Called with g.mu held.
func (g *BudgetedModel) admit() {
	g.refill()
	for {
		for i := range g.waiters {
			for g.waiters[i].len() > 0 && (*g.waiters[i].peek()).gone {
				g.waiters[i].pop()
			}
		}
		waiting := [2]bool{g.waiters[ci].len() > 0, g.waiters[cb].len() > 0}
		older := ci
		if waiting[ci] && waiting[cb] && (*g.waiters[cb].peek()).seq < (*g.waiters[ci].peek()).seq {
			older = cb
		}
		c := g.pick.next(waiting, older)
		if c < 0 {
			return
		}
		w := *g.waiters[c].peek()
		if w.cost > g.avail {
			g.wakeAfter(time.Duration((w.cost - g.avail) / float64(g.b.TokensPerMinute) * float64(time.Minute)))
			return
		}
		g.waiters[c].pop()
		g.avail -= w.cost
		g.pick.took(c, waiting[ci] && waiting[cb])
		g.stats.Calls++
		g.stats.MaxInFlight = max(g.stats.MaxInFlight, g.pick.running[ci]+g.pick.running[cb])
		close(w.ready)
	}
}

// wakeAfter arms the refill timer. Called with g.mu held.
func (g *BudgetedModel) wakeAfter(d time.Duration) {
	if g.closed {
		return
	}
	d = max(d, time.Millisecond)
	if g.timer == nil {
		g.timer = time.AfterFunc(d, func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.admit()
		})
		return
	}
	g.timer.Reset(d)
}

// usageWriter remembers the usage a completion reports.
type usageWriter struct {
	runtime.TurnWriter
	u runtime.Usage
}

func (w *usageWriter) Usage(u runtime.Usage) {
	w.u = u
	w.TurnWriter.Usage(u)
}

func (w *usageWriter) total() int {
	if w.u.Total > 0 {
		return w.u.Total
	}
	return w.u.Input + w.u.Output
}
