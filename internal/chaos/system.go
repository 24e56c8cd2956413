package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Target addresses a crash on the embedded System, whose threads run
// concurrently: the occurrence-th passage (from 0) of a slice of Site.Thread
// through Site.Point.
type Target struct {
	Site       Site
	Occurrence int
}

func (t Target) String() string { return fmt.Sprintf("%s#%d", t.Site, t.Occurrence) }

// Targets numbers the occurrences of each site in a list of passages.
func Targets(sites []Site) []Target {
	seen := map[Site]int{}
	out := make([]Target, len(sites))
	for i, s := range sites {
		out[i] = Target{s, seen[s]}
		seen[s]++
	}
	return out
}

// PlayOnSystem plays sc on the embedded agent system (internal/local), the
// one developers and the density benchmark run: its per-thread goroutines,
// mailboxes and retry with backoff, instead of this package's driver. With
// target set, the run crashes once there and the System's own retry
// redelivers the batch.
func PlayOnSystem(ctx context.Context, sc *Scenario, b Backend, target *Target) *Run {
	r := newRun(sc, b, CrashFree())
	r.timers.strict = false
	if target != nil {
		r.f.target, r.f.occurrence = &target.Site, target.Occurrence
	}
	cfg := local.Config{Model: r.model, Tools: r.toolbox(crashTimers{inner: r.timers, f: r.f}),
		History: slicedStore(crashHistory{HistoryStore: r.store, f: r.f}, r.store.HistoryStore), Output: &outputs{},
		Observer: systemObserver{r}, Limits: sc.Limits, Logger: slog.New(slog.DiscardHandler),
		SliceAttempts: 5, RetryBase: time.Millisecond, Compaction: sc.Compaction}
	if cfg.Limits.RetryBase == 0 {
		cfg.Limits.RetryBase = time.Millisecond
	}
	if b.Dedup != nil && !sc.NoDedup {
		cfg.Dedup = crashDedup{DedupStore: b.Dedup, f: r.f}
	}
	sys, err := local.New(cfg)
	if err != nil {
		r.problem("building the system: %v", err)
		return r
	}
	// The System publishes an error event per dead letter itself, outside
	// any slice (the driver's queue model has no such event): only the
	// engine's publishes are recorded and pass the crash point.
	sys.Engine().Output = crashOutput{inner: r.out, f: r.f}
	sys.Engine().Faults = engineFaults{r.f}
	sys.Engine().Entropy = runtime.FixedEntropy
	sys.Engine().Now = r.now
	if r.ledger != nil {
		sys.Engine().Budgets = &runtime.Budgets{Ledger: crashLedger{inner: r.ledger, f: r.f}, DefaultMaxOutputTokens: budgetMaxOutput}
	}
	if l := sc.Liveness; l != nil {
		ll := *l
		ll.Timers = crashTimers{inner: r.timers, f: r.f}
		sys.Engine().Liveness = &ll
	}
	r.send = sys.Send
	r.settle = func(ctx context.Context) error {
		select {
		case <-sys.Idle():
			return nil
		case <-time.After(20 * time.Second):
			return fmt.Errorf("the system did not go idle; %d threads active", sys.Active())
		}
	}
	if err := sys.Start(ctx); err != nil {
		r.problem("starting the system: %v", err)
		return r
	}
	defer sys.Stop()
	for i, step := range sc.Steps {
		if err := step(ctx, r); err != nil {
			r.problem("step %d: %v", i, err)
			break
		}
		select {
		case <-sys.Idle():
		case <-time.After(20 * time.Second):
			r.problem("step %d: the system did not go idle; %d threads active", i, sys.Active())
			return r
		}
	}
	dead, _ := sys.DeadLetters()
	for _, d := range dead {
		if strings.HasPrefix(d.Reason, "gave up") {
			r.problem("the system gave up on %s: %s", d.Message.ID, d.Reason)
			continue
		}
		r.deadLetter(d.Message.ID, d.Reason)
	}
	return r
}

// systemObserver tells crashed slices from failed ones.
type systemObserver struct{ r *Run }

// Wants reports that only slice ends matter (runtime.EventFilter): the
// engine then times no phase for this observer.
func (o systemObserver) Wants(t runtime.EventType, failed bool) bool {
	return t == runtime.EventSliceFinished
}

func (o systemObserver) Observe(ctx context.Context, ev runtime.Event) {
	if ev.Type != runtime.EventSliceFinished || ev.Reason != "" {
		return
	}
	o.r.mu.Lock()
	o.r.slices++
	o.r.mu.Unlock()
	if ev.Err == nil {
		return
	}
	if o.r.f.takeCrash() {
		o.r.mu.Lock()
		o.r.crashes++
		o.r.mu.Unlock()
		return
	}
	o.r.problem("unexpected slice error on thread %s: %v", ev.ThreadID, ev.Err)
}

// ReferenceOnSystem is Reference on the embedded System.
func ReferenceOnSystem(ctx context.Context, sc *Scenario, nb NewBackend) (*Snapshot, []Site, []string, error) {
	b, done, err := nb()
	if err != nil {
		return nil, nil, nil, err
	}
	defer done()
	r := PlayOnSystem(ctx, sc, b, nil)
	snap, problems := r.Snapshot(ctx)
	sites, _ := r.f.state()
	return snap, sites, problems, nil
}

// SystemCrashes is Crashes on the embedded System: m.Sites must come from
// ReferenceOnSystem, and each crash is addressed by its Target.
func (m *Matrix) SystemCrashes(ctx context.Context) []Divergence {
	var out []Divergence
	targets := Targets(m.Sites)
	for _, i := range m.sites() {
		if m.Report.stopped() {
			break
		}
		tg := targets[i]
		b, done, err := m.New()
		if err != nil {
			m.Report.add(m.Scenario.Name, "system-crash/"+m.Backend, tg.String(), nil, nil, []string{"creating the backend: " + err.Error()})
			continue
		}
		r := PlayOnSystem(ctx, m.Scenario, b, &tg)
		snap, problems := r.Snapshot(ctx)
		done()
		problems = Compare(m.Ref, snap, problems)
		_, fired := r.f.state()
		if fired == nil {
			// On the embedded System the batches depend on goroutine
			// timing (a child's report and its close notice reach the
			// parent in one batch or in two), so the planned passage may
			// not come in this run. Such a run is not counted; its end
			// state is still compared with the reference, and any
			// difference counts.
			if d := m.Report.skip(m.Scenario.Name, "system-crash/"+m.Backend, tg.String(), r, problems); d != nil {
				out = append(out, *d)
			}
			continue
		}
		if d := m.Report.add(m.Scenario.Name, "system-crash/"+m.Backend, tg.String(), r, fired, problems); d != nil {
			out = append(out, *d)
		}
	}
	return out
}
