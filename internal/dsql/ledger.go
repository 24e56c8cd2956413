package dsql

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The trees' budgets of serve's PostgreSQL store: one row of tree_ledger
// per tree whose limit was set, its runtime.LedgerAccount as JSON text and
// a version. An operation reads the row, applies the account's rules and
// writes it back only if the version is still the one it read, so two
// processes sharing the database never both take the last room of a tree:
// the loser reads again. A tree whose limit was never set has no row and
// costs one read per operation, no write.

const (
	ledgerReadSQL   = `SELECT version, data FROM tree_ledger WHERE tree = $1`
	ledgerInsertSQL = `INSERT INTO tree_ledger (tree, version, data) VALUES ($1, 1, $2) ON CONFLICT (tree) DO NOTHING`
	ledgerUpdateSQL = `UPDATE tree_ledger SET version = version + 1, data = $3 WHERE tree = $1 AND version = $2`
)

// ledgerAttempts bounds how often an operation reads again after another
// writer changed the row between its read and its write.
const ledgerAttempts = 50

// Ledger is the runtime.Ledger on PostgreSQL/DSQL (Store.Ledger). It is
// safe for concurrent use; the operations of one process on one tree are
// serialised (by one of ledgerStripes locks, chosen by the tree), so the
// version check mostly meets writers of other processes.
type Ledger struct {
	s       *Store
	stripes [ledgerStripes]sync.Mutex
}

// ledgerStripes is how many locks a Ledger spreads its trees over.
const ledgerStripes = 64

func (l *Ledger) lock(tree string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(tree))
	return &l.stripes[h.Sum32()%ledgerStripes]
}

var _ runtime.Ledger = (*Ledger)(nil)

// Ledger returns a ledger over the store's database (schema version 4).
func (s *Store) Ledger() *Ledger { return &Ledger{s: s} }

// update applies op to the tree's account and stores the result when op
// reports a change. Without a row, op is not called and update returns
// nil unless create is set (op then starts from an empty account).
func (l *Ledger) update(ctx context.Context, tree string, create bool, op func(a *runtime.LedgerAccount) bool) (*runtime.LedgerAccount, error) {
	mu := l.lock(tree)
	mu.Lock()
	defer mu.Unlock()
	for attempt := 1; ; attempt++ {
		a, version, err := l.read(ctx, tree)
		if err != nil {
			return nil, err
		}
		if a == nil {
			if !create {
				return nil, nil
			}
			a = &runtime.LedgerAccount{}
		}
		if !op(a) {
			return a, nil
		}
		data, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("dsql: encoding the budget of tree %s: %w", tree, err)
		}
		var won bool
		err = l.s.retry.run(ctx, tree, func() (bool, error) {
			var tag interface{ RowsAffected() int64 }
			var err error
			if version == 0 {
				tag, err = l.s.db.Exec(ctx, ledgerInsertSQL, tree, string(data))
			} else {
				tag, err = l.s.db.Exec(ctx, ledgerUpdateSQL, tree, version, string(data))
			}
			if err != nil {
				return retryable(err)
			}
			won = tag.RowsAffected() == 1
			return false, nil
		})
		if err != nil {
			return nil, fmt.Errorf("dsql: writing the budget of tree %s: %w", tree, err)
		}
		if won {
			return a, nil
		}
		if attempt >= ledgerAttempts {
			return nil, &ConflictError{ThreadID: tree, Reason: ReasonVersion, Detail: "the tree's budget kept changing under its update", Attempts: attempt, Err: runtime.ErrConflict}
		}
		if err := l.s.retry.withDefaults().Sleep(ctx, l.s.retry.backoff(min(attempt, 5))); err != nil {
			return nil, err
		}
	}
}

// read returns the tree's stored account and its version; nil and 0 when
// it has none.
func (l *Ledger) read(ctx context.Context, tree string) (*runtime.LedgerAccount, int64, error) {
	var version int64
	var data string
	err := l.s.retry.run(ctx, tree, func() (bool, error) {
		version, data = 0, ""
		rows, err := l.s.db.Query(ctx, ledgerReadSQL, tree)
		if err != nil {
			return retryable(err)
		}
		defer rows.Close()
		if rows.Next() {
			if err := rows.Scan(&version, &data); err != nil {
				return false, err
			}
		}
		return retryable(rows.Err())
	})
	if err != nil {
		return nil, 0, fmt.Errorf("dsql: reading the budget of tree %s: %w", tree, err)
	}
	if version == 0 {
		return nil, 0, nil
	}
	a := &runtime.LedgerAccount{}
	if err := json.Unmarshal([]byte(data), a); err != nil {
		return nil, 0, fmt.Errorf("dsql: decoding the budget of tree %s: %w", tree, err)
	}
	return a, version, nil
}

// Reserve implements runtime.Ledger.
func (l *Ledger) Reserve(ctx context.Context, r runtime.Reservation) (bool, error) {
	ok := true
	_, err := l.update(ctx, r.Tree, false, func(a *runtime.LedgerAccount) bool {
		var changed bool
		ok, changed = a.Reserve(r)
		return changed
	})
	if err != nil {
		return false, err
	}
	return ok, nil
}

// Settle implements runtime.Ledger.
func (l *Ledger) Settle(ctx context.Context, tree, thread, id string, used runtime.Spend) error {
	_, err := l.update(ctx, tree, false, func(a *runtime.LedgerAccount) bool { return a.Settle(thread, id, used) })
	return err
}

// Change implements runtime.Ledger.
func (l *Ledger) Change(ctx context.Context, tree, id string, c runtime.BudgetChange) ([]string, error) {
	a, err := l.update(ctx, tree, true, func(a *runtime.LedgerAccount) bool { return a.Change(id, c) })
	if err != nil {
		return nil, err
	}
	return a.View().Waiting, nil
}

// Account returns the tree's account (the zero Account when its limit was
// never set).
func (l *Ledger) Account(ctx context.Context, tree string) (runtime.Account, error) {
	a, _, err := l.read(ctx, tree)
	if err != nil || a == nil {
		return runtime.Account{}, err
	}
	return a.View(), nil
}
