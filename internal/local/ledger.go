package local

import (
	"context"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// LedgerAccount is one tree's account with the ledger's rules
// (runtime.LedgerAccount).
type LedgerAccount = runtime.LedgerAccount

// LedgerHold is a reservation held (runtime.LedgerHold).
type LedgerHold = runtime.LedgerHold

// Ledger is the in-memory runtime.Ledger of the embedded runtime and of
// tests. Only trees whose limit was set have an account (an idle agent's
// tree costs nothing here). It is safe for concurrent use.
type Ledger struct {
	mu    sync.Mutex
	trees map[string]*LedgerAccount
}

var _ runtime.Ledger = (*Ledger)(nil)

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{trees: map[string]*LedgerAccount{}} }

func (l *Ledger) account(tree string) *LedgerAccount {
	a := l.trees[tree]
	if a == nil {
		a = &LedgerAccount{}
		l.trees[tree] = a
	}
	return a
}

// Reserve implements runtime.Ledger. A tree whose limit was never set has
// no account: its completions are admitted and nothing is kept.
func (l *Ledger) Reserve(_ context.Context, r runtime.Reservation) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.trees[r.Tree]
	if a == nil {
		return true, nil
	}
	ok, _ := a.Reserve(r)
	return ok, nil
}

// Settle implements runtime.Ledger.
func (l *Ledger) Settle(_ context.Context, tree, thread, id string, used runtime.Spend) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.trees[tree]; a != nil {
		a.Settle(thread, id, used)
	}
	return nil
}

// Change implements runtime.Ledger.
func (l *Ledger) Change(_ context.Context, tree, id string, c runtime.BudgetChange) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.account(tree)
	a.Change(id, c)
	return a.View().Waiting, nil
}

// Account returns the tree's account.
func (l *Ledger) Account(_ context.Context, tree string) (runtime.Account, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.trees[tree]; a != nil {
		return a.View(), nil
	}
	return runtime.Account{}, nil
}
