package disk

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Ledger is the durable runtime.Ledger of serve: each tree's account
// (runtime.LedgerAccount, the memory ledger's rules) is one row of the
// ledger table, written through before an operation returns. Accounts are
// cached in memory once read; one mutex serialises the operations (one
// process owns the data directory).
type Ledger struct {
	d      *DB
	mu     sync.Mutex
	loaded bool // trees holds every stored account
	trees  map[string]*local.LedgerAccount
}

var _ runtime.Ledger = (*Ledger)(nil)

// Ledger returns the database's ledger (the same one each time).
func (d *DB) Ledger() *Ledger {
	d.ledgerOnce.Do(func() { d.ledger = &Ledger{d: d, trees: map[string]*local.LedgerAccount{}} })
	return d.ledger
}

// account returns the tree's account; nil when it has none and create is
// false. Only trees whose limit was set have one, so the first use reads
// them all (a small table) and a tree not among them needs no read.
func (l *Ledger) account(ctx context.Context, tree string, create bool) (*local.LedgerAccount, error) {
	if !l.loaded {
		if err := l.load(ctx); err != nil {
			return nil, err
		}
	}
	a := l.trees[tree]
	if a == nil && create {
		a = &local.LedgerAccount{}
		l.trees[tree] = a
	}
	return a, nil
}

func (l *Ledger) load(ctx context.Context) error {
	rows, err := l.d.rdb.QueryContext(ctx, `SELECT tree, data FROM ledger`)
	if err != nil {
		return fmt.Errorf("disk: reading the budgets of trees: %w", err)
	}
	defer rows.Close()
	trees := map[string]*local.LedgerAccount{}
	for rows.Next() {
		var tree string
		var data []byte
		if err := rows.Scan(&tree, &data); err != nil {
			return fmt.Errorf("disk: reading the budgets of trees: %w", err)
		}
		a := &local.LedgerAccount{}
		if err := json.Unmarshal(data, a); err != nil {
			return fmt.Errorf("disk: decoding the budget of tree %s: %w", tree, err)
		}
		trees[tree] = a
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("disk: reading the budgets of trees: %w", err)
	}
	l.trees, l.loaded = trees, true
	return nil
}

// write stores a's new value; on failure the cache forgets the tree, so
// the next operation reads what is stored.
func (l *Ledger) write(ctx context.Context, tree string, a *local.LedgerAccount) error {
	data, err := json.Marshal(a)
	if err == nil {
		err = l.d.w.do(ctx, &wreq{atomic: true, fn: func(w *wconn) error {
			_, err := w.exec(`INSERT INTO ledger (tree, data) VALUES (?, ?) ON CONFLICT (tree) DO UPDATE SET data = excluded.data`, tree, data)
			return err
		}})
	}
	if err != nil {
		l.loaded = false // read again what is stored
		return fmt.Errorf("disk: writing the budget of tree %s: %w", tree, err)
	}
	return nil
}

// Reserve implements runtime.Ledger.
func (l *Ledger) Reserve(ctx context.Context, r runtime.Reservation) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, err := l.account(ctx, r.Tree, false)
	if err != nil || a == nil {
		return err == nil, err
	}
	ok, changed := a.Reserve(r)
	if changed {
		if err := l.write(ctx, r.Tree, a); err != nil {
			return false, err
		}
	}
	return ok, nil
}

// Settle implements runtime.Ledger.
func (l *Ledger) Settle(ctx context.Context, tree, thread, id string, used runtime.Spend) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, err := l.account(ctx, tree, false)
	if err != nil || a == nil {
		return err
	}
	if a.Settle(thread, id, used) {
		return l.write(ctx, tree, a)
	}
	return nil
}

// Change implements runtime.Ledger.
func (l *Ledger) Change(ctx context.Context, tree, id string, c runtime.BudgetChange) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, err := l.account(ctx, tree, true)
	if err != nil {
		return nil, err
	}
	if a.Change(id, c) {
		if err := l.write(ctx, tree, a); err != nil {
			return nil, err
		}
	}
	return a.View().Waiting, nil
}

// Account returns the tree's account.
func (l *Ledger) Account(ctx context.Context, tree string) (runtime.Account, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, err := l.account(ctx, tree, false)
	if err != nil || a == nil {
		return runtime.Account{}, err
	}
	return a.View(), nil
}
