package dsql

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
)

func TestLedgerConformance(t *testing.T) {
	storetest.RunLedger(t, func(t *testing.T) storetest.Ledger {
		return New(newSchemaPool(t, repeatableRead), Options{}).Ledger()
	})
}

// twoProcesses is one tree's ledger as two serve processes sharing a
// database see it: each thread's operations go through the ledger of the
// process that runs it (half the threads each), so only the row's version
// check keeps them from both taking the last room.
type twoProcesses struct{ a, b *Ledger }

func (p twoProcesses) of(thread string) *Ledger {
	if len(thread) > 0 && thread[len(thread)-1]%2 == 1 {
		return p.b
	}
	return p.a
}

func (p twoProcesses) Reserve(ctx context.Context, r runtime.Reservation) (bool, error) {
	return p.of(r.Thread).Reserve(ctx, r)
}

func (p twoProcesses) Settle(ctx context.Context, tree, thread, id string, used runtime.Spend) error {
	return p.of(thread).Settle(ctx, tree, thread, id, used)
}

func (p twoProcesses) Change(ctx context.Context, tree, id string, c runtime.BudgetChange) ([]string, error) {
	return p.a.Change(ctx, tree, id, c)
}

func (p twoProcesses) Account(ctx context.Context, tree string) (runtime.Account, error) {
	return p.b.Account(ctx, tree)
}

// Two processes' ledgers on one database, children of one tree spread over
// both: the limit holds (ConcurrentTree fails past one reservation per child
// or when reservations stay held).
func TestLedgerTwoProcesses(t *testing.T) {
	pool := newSchemaPool(t, repeatableRead)
	p := twoProcesses{a: New(pool, Options{}).Ledger(), b: New(pool, Options{}).Ledger()}
	r := storetest.ConcurrentTree(t, p, 20, 4)
	t.Logf("%+v", r)
	if r.Completions == 0 {
		t.Fatal("no completion was admitted")
	}
}

// The ledger is durable: a new store over the same database (a restart of
// serve) finds the tree's limit, spend, held reservation and waiting
// threads.
func TestLedgerSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	pool := newSchemaPool(t)
	l := New(pool, Options{}).Ledger()
	if _, err := l.Change(ctx, "root", "m1", runtime.BudgetChange{Limit: runtime.Budget{Tokens: 250}}); err != nil {
		t.Fatal(err)
	}
	for i, th := range []string{"root", "kid"} {
		id := []string{"c1", "c2"}[i]
		if ok, err := l.Reserve(ctx, runtime.Reservation{Tree: "root", Thread: th, ID: id, Amount: runtime.Spend{Tokens: 100}}); err != nil || !ok {
			t.Fatalf("reserve %s: %v %v", th, ok, err)
		}
	}
	if err := l.Settle(ctx, "root", "root", "c1", runtime.Spend{Tokens: 120, Micros: 9}); err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Reserve(ctx, runtime.Reservation{Tree: "root", Thread: "late", ID: "c3", Amount: runtime.Spend{Tokens: 100}}); err != nil || ok {
		t.Fatalf("a reservation past the limit: %v %v", ok, err)
	}
	l2 := New(pool, Options{}).Ledger()
	a, err := l2.Account(ctx, "root")
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.Account{Limit: runtime.Budget{Tokens: 250}, Spent: runtime.Spend{Tokens: 120, Micros: 9}, Reserved: runtime.Spend{Tokens: 100}, Waiting: []string{"late"}}
	if a.Limit != want.Limit || a.Spent != want.Spent || a.Reserved != want.Reserved || len(a.Waiting) != 1 || a.Waiting[0] != "late" {
		t.Fatalf("after a restart: %+v, want %+v", a, want)
	}
	// The limit change is applied once per ID after the restart too.
	w, err := l2.Change(ctx, "root", "m1", runtime.BudgetChange{Limit: runtime.Budget{Tokens: 250}, Add: true})
	if err != nil || len(w) != 1 {
		t.Fatalf("change again: %v %v", w, err)
	}
	if a, _ := l2.Account(ctx, "root"); a.Limit.Tokens != 250 {
		t.Fatalf("a change applied twice across a restart: limit %d", a.Limit.Tokens)
	}
}
