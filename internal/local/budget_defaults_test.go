package local

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Before any call reports usage, a call is assumed to cost EstimateTokens,
// 1000 when left at zero: with 1000 tokens a minute and a clock that
// stands still, the default lets one call through, and an estimate of 500
// lets two.
func TestBudgetEstimateTokensDefault(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		estimate, through int
	}{{0, 1}, {500, 2}} {
		calls := 0
		inner := modelFunc(func(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
			calls++ // reports no usage: the estimate stays
			return nil
		})
		g, err := Budgeted(inner, Budget{TokensPerMinute: 1000, EstimateTokens: tc.estimate, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		req := &runtime.CompletionRequest{ThreadID: "t"}
		for i := range tc.through {
			if err := completeWithin(t, g, context.Background(), req); err != nil {
				t.Fatalf("EstimateTokens %d: call %d: %v", tc.estimate, i, err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := completeWithin(t, g, ctx, req); err == nil || calls != tc.through {
			t.Fatalf("EstimateTokens %d: call %d in the same minute: err %v, %d calls reached the model; want it held back", tc.estimate, tc.through+1, err, calls)
		}
		g.Close()
	}
}

// A call's cost is the usage's Total when it reports one (cached or
// reasoning tokens can make it more than input + output), input + output
// otherwise: after a call that used 600 tokens of 1000 a minute, the next
// one is estimated at 600 and does not fit in what is left.
func TestBudgetCountsTheUsageTotal(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, u := range []runtime.Usage{{Input: 60, Output: 40, Total: 600}, {Input: 300, Output: 300}} {
		calls := 0
		inner := modelFunc(func(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
			calls++
			w.Usage(u)
			return nil
		})
		g, err := Budgeted(inner, Budget{TokensPerMinute: 1000, EstimateTokens: 100, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		req := &runtime.CompletionRequest{ThreadID: "t"}
		if err := completeWithin(t, g, context.Background(), req); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := completeWithin(t, g, ctx, req); err == nil || calls != 1 {
			t.Fatalf("usage %+v: second call with 400 tokens left and 600 estimated: err %v, %d calls; want it held back", u, err, calls)
		}
		g.Close()
	}
}

// Without a token bound, usage is not counted against anything: calls
// bounded only by Concurrency go through one after another whatever they
// used.
func TestBudgetWithoutTokenBoundIgnoresUsage(t *testing.T) {
	calls := 0
	inner := modelFunc(func(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
		calls++
		w.Usage(runtime.Usage{Input: 5000, Output: 5000})
		return nil
	})
	g, err := Budgeted(inner, Budget{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	req := &runtime.CompletionRequest{ThreadID: "t"}
	if err := completeWithin(t, g, context.Background(), req); err != nil {
		t.Fatal(err)
	}
	// A cancelled context: the call must be admitted at once, without
	// waiting.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := completeWithin(t, g, ctx, req); err != nil || calls != 2 {
		t.Fatalf("second call, one at a time and no token bound: err %v, %d calls; want it through at once", err, calls)
	}
}

// completeWithin is g.Complete bounded: a call the budget must admit
// fails with the context's error if it is not admitted within 30 s, and
// a call that does not return at all (a lock left held) fails the test
// after 40 s, instead of waiting until the test binary's timeout.
func completeWithin(t *testing.T, g *BudgetedModel, ctx context.Context, req *runtime.CompletionRequest) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.Complete(ctx, req, discardTurn{}) }()
	select {
	case err := <-done:
		return err
	case <-time.After(40 * time.Second):
		t.Fatal("Complete did not return: the budget is stuck")
		return nil
	}
}

// With FIFO the budget admits waiting calls in the order they came,
// whatever their class; without it, interactive first: one call at a
// time, a background call that waits before an interactive one goes first
// only with FIFO.
func TestBudgetFIFOAdmitsInArrivalOrder(t *testing.T) {
	for _, fifo := range []bool{true, false} {
		var mu sync.Mutex
		var order []string
		hold, entered := make(chan struct{}), make(chan struct{})
		inner := modelFunc(func(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
			mu.Lock()
			order = append(order, req.ThreadID)
			mu.Unlock()
			if req.ThreadID == "first" {
				close(entered)
				<-hold
			}
			return nil
		})
		g, err := Budgeted(inner, Budget{Concurrency: 1, FIFO: fifo})
		if err != nil {
			t.Fatal(err)
		}
		waits := make(chan struct{}, 4)
		g.mu.Lock()
		g.onWait = func() { waits <- struct{}{} }
		g.mu.Unlock()
		done := make(chan error, 3)
		call := func(thread string, c int) {
			go func() {
				ctx, cancel := context.WithTimeout(withClass(context.Background(), c), 30*time.Second)
				defer cancel()
				done <- g.Complete(ctx, &runtime.CompletionRequest{ThreadID: thread}, discardTurn{})
			}()
		}
		call("first", ci)
		select {
		case <-entered:
		case <-time.After(30 * time.Second):
			t.Fatalf("FIFO %v: the first call was not admitted", fifo)
		}
		for _, w := range []struct {
			thread string
			class  int
		}{{"background", cb}, {"interactive", ci}} {
			call(w.thread, w.class)
			select {
			case <-waits:
			case <-time.After(30 * time.Second):
				t.Fatalf("FIFO %v: the %s call never waited for the budget", fifo, w.thread)
			}
		}
		close(hold)
		for range 3 {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("FIFO %v: %v", fifo, err)
				}
			case <-time.After(40 * time.Second):
				t.Fatalf("FIFO %v: a call did not return: the budget is stuck", fifo)
			}
		}
		// The first call was admitted at once and the other two waited
		// (each signalled onWait): the stats say so. (Waited once counted
		// down, and the only check was that it was not 0.)
		if st := g.Stats(); st.Calls != 3 || st.Waited != 2 || st.MaxInFlight != 1 {
			t.Errorf("FIFO %v: budget stats %+v; want 3 calls, 2 of them waited, 1 at most in flight", fifo, st)
		}
		g.Close()
		want := []string{"first", "interactive", "background"}
		if fifo {
			want = []string{"first", "background", "interactive"}
		}
		mu.Lock()
		got := slices.Clone(order)
		mu.Unlock()
		if !slices.Equal(got, want) {
			t.Errorf("FIFO %v: calls reached the model in order %v, want %v", fifo, got, want)
		}
	}
}
