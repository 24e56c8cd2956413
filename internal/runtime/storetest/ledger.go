package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Ledger is a runtime.Ledger that can show a tree's account.
type Ledger interface {
	runtime.Ledger
	Account(ctx context.Context, tree string) (runtime.Account, error)
}

// RunLedger runs the ledger conformance tests against fresh ledgers.
func RunLedger(t *testing.T, newLedger func(t *testing.T) Ledger) {
	t.Run("ReserveSettle", func(t *testing.T) { testReserveSettle(t, newLedger(t)) })
	t.Run("RefusalWaitsAndChangeWakes", func(t *testing.T) { testRefusal(t, newLedger(t)) })
	t.Run("AbandonedReservationReleased", func(t *testing.T) { testAbandoned(t, newLedger(t)) })
	t.Run("ConcurrentChildren", func(t *testing.T) {
		r := ConcurrentTree(t, newLedger(t), 50, 4)
		t.Logf("%+v", r)
	})
}

func mustAccount(t *testing.T, l Ledger, tree string) runtime.Account {
	t.Helper()
	a, err := l.Account(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func reserve(t *testing.T, l Ledger, tree, thread, id string, tok int64) bool {
	t.Helper()
	ok, err := l.Reserve(context.Background(), runtime.Reservation{Tree: tree, Thread: thread, ID: id, Amount: runtime.Spend{Tokens: tok, Micros: tok * 10}})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func change(t *testing.T, l Ledger, tree, id string, c runtime.BudgetChange) []string {
	t.Helper()
	w, err := l.Change(context.Background(), tree, id, c)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func testReserveSettle(t *testing.T, l Ledger) {
	ctx := context.Background()
	if !reserve(t, l, "free", "a", "c1", 100) {
		t.Fatal("a tree without a limit refused a reservation")
	}
	if a := mustAccount(t, l, "free"); a.Reserved.Tokens != 0 {
		t.Fatalf("a tree whose limit was never set keeps an account: %+v", a)
	}
	change(t, l, "r", "set", runtime.BudgetChange{Limit: runtime.Budget{Tokens: 1_000_000}})
	if !reserve(t, l, "r", "a", "c1", 100) {
		t.Fatal("reserving the same completion again was refused")
	}
	if a := mustAccount(t, l, "r"); a.Reserved.Tokens != 100 {
		t.Fatalf("reserved %d after reserving one completion twice, want 100 (idempotent)", a.Reserved.Tokens)
	}
	if err := l.Settle(ctx, "r", "a", "c1", runtime.Spend{Tokens: 60, Micros: 7}); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle(ctx, "r", "a", "c1", runtime.Spend{Tokens: 60, Micros: 7}); err != nil {
		t.Fatal(err)
	}
	a := mustAccount(t, l, "r")
	if a.Spent != (runtime.Spend{Tokens: 60, Micros: 7}) || a.Reserved != (runtime.Spend{}) {
		t.Fatalf("account %+v after settling twice, want 60 tokens / 7 micros spent once, nothing reserved", a)
	}
	// The slice died after settling and before its commit: the retry does
	// the same completion again. It is admitted without a reservation and
	// its settlement counts nothing more, so the tree's spend stays what
	// the thread commits.
	if !reserve(t, l, "r", "a", "c1", 100) {
		t.Fatal("the settled completion done again was refused")
	}
	if err := l.Settle(ctx, "r", "a", "c1", runtime.Spend{Tokens: 60, Micros: 7}); err != nil {
		t.Fatal(err)
	}
	if a := mustAccount(t, l, "r"); a.Spent != (runtime.Spend{Tokens: 60, Micros: 7}) || a.Reserved != (runtime.Spend{}) {
		t.Fatalf("account %+v after the settled completion was done again, want it counted once", a)
	}
	// The thread's next completion reserves and settles as usual.
	if !reserve(t, l, "r", "a", "c2", 100) {
		t.Fatal("the next completion was refused")
	}
	if a := mustAccount(t, l, "r"); a.Reserved.Tokens != 100 {
		t.Fatalf("reserved %d for the next completion, want 100", a.Reserved.Tokens)
	}
	if err := l.Settle(ctx, "r", "a", "c2", runtime.Spend{Tokens: 40}); err != nil {
		t.Fatal(err)
	}
	if a := mustAccount(t, l, "r"); a.Spent.Tokens != 100 || a.Reserved != (runtime.Spend{}) {
		t.Fatalf("account %+v after the next completion, want 100 spent", a)
	}
	// A slice of two completions (a synchronous tool's loop-back) died
	// after settling both: the retry does both again, counted once each.
	for _, id := range []string{"c1", "c2"} {
		if !reserve(t, l, "r", "a", id, 100) {
			t.Fatalf("%s done again was refused", id)
		}
		if err := l.Settle(ctx, "r", "a", id, runtime.Spend{Tokens: 50}); err != nil {
			t.Fatal(err)
		}
	}
	if a := mustAccount(t, l, "r"); a.Spent.Tokens != 100 || a.Reserved != (runtime.Spend{}) {
		t.Fatalf("account %+v after a slice's two settled completions were done again, want 100 spent", a)
	}
}

func testRefusal(t *testing.T, l Ledger) {
	change(t, l, "r", "set1", runtime.BudgetChange{Limit: runtime.Budget{Tokens: 150}})
	if !reserve(t, l, "r", "a", "c1", 100) {
		t.Fatal("100 of 150 refused")
	}
	if reserve(t, l, "r", "b", "c1", 100) {
		t.Fatal("200 reserved against a limit of 150")
	}
	if a := mustAccount(t, l, "r"); !slices.Equal(a.Waiting, []string{"b"}) || a.Reserved.Tokens != 100 {
		t.Fatalf("account %+v: want b waiting, 100 reserved", a)
	}
	w := change(t, l, "r", "raise1", runtime.BudgetChange{Add: true, Limit: runtime.Budget{Tokens: 100}})
	if !slices.Equal(w, []string{"b"}) {
		t.Fatalf("waiting after the raise = %v, want [b]", w)
	}
	change(t, l, "r", "raise1", runtime.BudgetChange{Add: true, Limit: runtime.Budget{Tokens: 100}}) // a retried slice
	if a := mustAccount(t, l, "r"); a.Limit.Tokens != 250 {
		t.Fatalf("limit %d after one raise applied twice, want 250", a.Limit.Tokens)
	}
	if !reserve(t, l, "r", "b", "c1", 100) {
		t.Fatal("refused after the raise")
	}
	if a := mustAccount(t, l, "r"); len(a.Waiting) != 0 {
		t.Fatalf("b still waiting once admitted: %v", a.Waiting)
	}
	change(t, l, "r", "usd", runtime.BudgetChange{Add: true, Limit: runtime.Budget{USD: 0.001}}) // 1000 micros
	if reserve(t, l, "r", "c", "c1", 50) {
		t.Fatal("admitted 50 tokens past the token limit of 250 (200 reserved)")
	}
	change(t, l, "r", "more", runtime.BudgetChange{Add: true, Limit: runtime.Budget{Tokens: 1000}})
	if reserve(t, l, "r", "c", "c1", 90) { // 900 micros + 2000 reserved > 1000
		t.Fatal("admitted past the dollar limit")
	}
}

func testAbandoned(t *testing.T, l Ledger) {
	change(t, l, "r", "set", runtime.BudgetChange{Limit: runtime.Budget{Tokens: 150}})
	if !reserve(t, l, "r", "a", "c1", 100) {
		t.Fatal("refused")
	}
	// a's slice died; its next completion has another ID and releases c1.
	if !reserve(t, l, "r", "a", "c2", 120) {
		t.Fatal("the abandoned reservation still counts against the thread's next one")
	}
	if a := mustAccount(t, l, "r"); a.Reserved.Tokens != 120 {
		t.Fatalf("reserved %d, want 120 (the abandoned 100 released)", a.Reserved.Tokens)
	}
	if err := l.Settle(context.Background(), "r", "a", "c1", runtime.Spend{Tokens: 100}); err != nil {
		t.Fatal(err)
	}
	if a := mustAccount(t, l, "r"); a.Spent.Tokens != 0 || a.Reserved.Tokens != 120 {
		t.Fatalf("settling a released reservation changed the account: %+v", a)
	}
}

// TreeResult is what ConcurrentTree measured.
type TreeResult struct {
	Children    int
	Limit       int64 // tokens
	Reservation int64 // tokens each completion reserves
	Spent       int64
	Overrun     int64 // Spent - Limit, 0 when under
	MaxInFlight int64 // most reservations held at once (from Reserve's return to Settle's)
	Completions int64
	Refusals    int64
}

// ConcurrentTree runs children goroutines, each a thread of one tree
// reserving, "completing" and settling until refused, against a limit of
// perChild reservations in all. A completion uses between half and twice
// its reservation (the estimate is short when the input was
// underestimated), so the tree may pass its limit only by what completions
// in flight used beyond their reservations: at most one reservation each.
// It fails the test when the overrun passes that bound or reservations are
// left held.
func ConcurrentTree(t *testing.T, l Ledger, children, perChild int) TreeResult {
	t.Helper()
	const res = 100
	r := TreeResult{Children: children, Limit: int64(children * perChild * res / 2), Reservation: res}
	change(t, l, "tree", "limit", runtime.BudgetChange{Limit: runtime.Budget{Tokens: r.Limit}})
	var inFlight, maxIn, completions, refusals atomic.Int64
	// Each completion uses at least res/2: more than this many means
	// the limit was passed by more than the bound.
	most := (r.Limit + int64(children)*res) / (res / 2)
	var wg sync.WaitGroup
	errs := make(chan error, children)
	for c := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			thread := fmt.Sprintf("child%02d", c)
			for i := 0; ; i++ {
				if completions.Load() > most {
					errs <- fmt.Errorf("%d completions admitted against a limit for at most %d: the limit does not hold", completions.Load(), most)
					return
				}
				id := fmt.Sprintf("%s-c%d", thread, i)
				ok, err := l.Reserve(ctx, runtime.Reservation{Tree: "tree", Thread: thread, ID: id, Amount: runtime.Spend{Tokens: res}})
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					refusals.Add(1)
					return
				}
				n := inFlight.Add(1)
				for m := maxIn.Load(); n > m && !maxIn.CompareAndSwap(m, n); m = maxIn.Load() {
				}
				used := int64(res/2 + (c*37+i*11)%(2*res-res/2+1)) // 50..200, spread over the children
				err = l.Settle(ctx, "tree", thread, id, runtime.Spend{Tokens: used})
				inFlight.Add(-1)
				if err != nil {
					errs <- err
					return
				}
				completions.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	a := mustAccount(t, l, "tree")
	r.Spent, r.MaxInFlight, r.Completions, r.Refusals = a.Spent.Tokens, maxIn.Load(), completions.Load(), refusals.Load()
	r.Overrun = max(r.Spent-r.Limit, 0)
	if a.Reserved != (runtime.Spend{}) {
		t.Fatalf("reservations left held after every child settled: %+v", a.Reserved)
	}
	if bound := int64(children) * res; r.Overrun > bound {
		t.Fatalf("overrun %d tokens passes one reservation per child (%d): %+v", r.Overrun, bound, r)
	}
	if r.Refusals != int64(children) || len(a.Waiting) != children {
		t.Fatalf("every child must end refused and waiting: %d refusals, %d waiting", r.Refusals, len(a.Waiting))
	}
	return r
}
