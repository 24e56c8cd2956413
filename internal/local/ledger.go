package local

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// LedgerAccount is one tree's account with the ledger's rules (see
// runtime.Ledger): the limit, what was spent, and at most one reservation
// held per thread. The memory Ledger keeps it in a map; internal/disk
// stores it as JSON, one row per tree.
type LedgerAccount struct {
	Limit runtime.Budget `json:"limit"`
	Spent runtime.Spend  `json:"spent"`
	// Holds are the reservations held, by thread.
	Holds map[string]LedgerHold `json:"holds,omitempty"`
	// Waiting are the threads refused since they were last admitted.
	Waiting []string `json:"waiting,omitempty"`
	// Changes are the IDs of the limit changes applied.
	Changes []string `json:"changes,omitempty"`
}

// LedgerHold is a reservation held.
type LedgerHold struct {
	ID     string        `json:"id"`
	Amount runtime.Spend `json:"amount"`
}

// Reserved is the sum of the reservations held.
func (a *LedgerAccount) Reserved() runtime.Spend {
	var s runtime.Spend
	for _, h := range a.Holds {
		s = s.Add(h.Amount)
	}
	return s
}

// Reserve applies r (runtime.Ledger.Reserve). changed says the account
// must be written back.
func (a *LedgerAccount) Reserve(r runtime.Reservation) (ok, changed bool) {
	if h, held := a.Holds[r.Thread]; held {
		if h.ID == r.ID {
			return true, false
		}
		delete(a.Holds, r.Thread) // the thread's slice that reserved it is gone
		changed = true
	}
	if a.Spent.Add(a.Reserved()).Add(r.Amount).Exceeds(a.Limit) {
		if !slices.Contains(a.Waiting, r.Thread) {
			a.Waiting = append(a.Waiting, r.Thread)
		}
		return false, true
	}
	if a.Holds == nil {
		a.Holds = map[string]LedgerHold{}
	}
	a.Holds[r.Thread] = LedgerHold{ID: r.ID, Amount: r.Amount}
	if i := slices.Index(a.Waiting, r.Thread); i >= 0 {
		a.Waiting = slices.Delete(a.Waiting, i, i+1)
	}
	return true, true
}

// Settle applies runtime.Ledger.Settle; it reports whether anything changed.
func (a *LedgerAccount) Settle(thread, id string, used runtime.Spend) bool {
	h, held := a.Holds[thread]
	if !held || h.ID != id {
		return false
	}
	delete(a.Holds, thread)
	a.Spent = a.Spent.Add(used)
	return true
}

// Change applies runtime.Ledger.Change; it reports whether anything changed.
func (a *LedgerAccount) Change(id string, c runtime.BudgetChange) bool {
	if slices.Contains(a.Changes, id) {
		return false
	}
	a.Changes = append(a.Changes, id)
	a.Limit = c.Apply(a.Limit)
	return true
}

// View returns the account as runtime.Account.
func (a *LedgerAccount) View() runtime.Account {
	w := slices.Clone(a.Waiting)
	sort.Strings(w)
	return runtime.Account{Limit: a.Limit, Spent: a.Spent, Reserved: a.Reserved(), Waiting: w}
}

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
