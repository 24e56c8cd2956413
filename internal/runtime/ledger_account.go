package runtime

import (
	"slices"
	"sort"
)

// LedgerAccount is one tree's account with the ledger's rules (see
// Ledger): the limit, what was spent, and at most one reservation
// held per thread: the rules every Ledger but DynamoDB's applies to an
// account it holds (internal/local keeps it in a map; internal/disk and
// internal/dsql store it as JSON, one row per tree).
type LedgerAccount struct {
	Limit Budget `json:"limit"`
	Spent Spend  `json:"spent"`
	// Holds are the reservations held, by thread.
	Holds map[string]LedgerHold `json:"holds,omitempty"`
	// Waiting are the threads refused since they were last admitted.
	Waiting []string `json:"waiting,omitempty"`
	// Changes are the IDs of the limit changes applied.
	Changes []string `json:"changes,omitempty"`
}

// LedgerHold is the thread's reservation held, or (Settled) its last
// one, settled or released. Done are the IDs of the thread's latest
// settled completions (at most LedgerDoneKept): a slice that dies after
// settling and before its commit does its completions again under the
// same IDs, and each must be admitted and settled no second time.
type LedgerHold struct {
	ID      string   `json:"id"`
	Amount  Spend    `json:"amount"`
	Settled bool     `json:"settled,omitempty"`
	Done    []string `json:"done,omitempty"`
}

// LedgerDoneKept is how many settled completion IDs a thread's hold
// remembers: more than one slice makes (Limits.MaxCompletions, 8 by
// default).
const LedgerDoneKept = 16

// DoneAfter returns done with id appended, keeping the latest
// LedgerDoneKept.
func DoneAfter(done []string, id string) []string {
	out := append(slices.Clone(done), id)
	if len(out) > LedgerDoneKept {
		out = out[len(out)-LedgerDoneKept:]
	}
	return out
}

// Reserved is the sum of the reservations held.
func (a *LedgerAccount) Reserved() Spend {
	var s Spend
	for _, h := range a.Holds {
		s = s.Add(h.Amount)
	}
	return s
}

// Reserve applies r (Ledger.Reserve). changed says the account
// must be written back.
func (a *LedgerAccount) Reserve(r Reservation) (ok, changed bool) {
	h, held := a.Holds[r.Thread]
	if held && (h.ID == r.ID || slices.Contains(h.Done, r.ID)) {
		return true, false // reserved already, or done and settled
	}
	if held && !h.Settled {
		// The thread's slice that reserved it is gone: release it.
		a.Holds[r.Thread] = LedgerHold{ID: h.ID, Settled: true, Done: h.Done}
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
	a.Holds[r.Thread] = LedgerHold{ID: r.ID, Amount: r.Amount, Done: h.Done}
	if i := slices.Index(a.Waiting, r.Thread); i >= 0 {
		a.Waiting = slices.Delete(a.Waiting, i, i+1)
	}
	return true, true
}

// Settle applies Ledger.Settle; it reports whether anything changed.
func (a *LedgerAccount) Settle(thread, id string, used Spend) bool {
	h, held := a.Holds[thread]
	if !held || h.ID != id || h.Settled {
		return false
	}
	a.Holds[thread] = LedgerHold{ID: id, Settled: true, Done: DoneAfter(h.Done, id)}
	a.Spent = a.Spent.Add(used)
	return true
}

// Change applies Ledger.Change; it reports whether anything changed.
func (a *LedgerAccount) Change(id string, c BudgetChange) bool {
	if slices.Contains(a.Changes, id) {
		return false
	}
	a.Changes = append(a.Changes, id)
	a.Limit = c.Apply(a.Limit)
	return true
}

// View returns the account as Account.
func (a *LedgerAccount) View() Account {
	w := slices.Clone(a.Waiting)
	sort.Strings(w)
	return Account{Limit: a.Limit, Spent: a.Spent, Reserved: a.Reserved(), Waiting: w}
}
