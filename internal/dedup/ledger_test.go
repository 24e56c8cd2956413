package dedup_test

import (
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
)

func newLedger(t *testing.T) storetest.Ledger {
	c, name := newTable(t)
	l, err := dedup.NewLedger(c, name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The DynamoDB ledger passes the ledger suite on DynamoDB Local, the 50
// concurrent children of one small tree budget included.
func TestLedgerConformance(t *testing.T) { storetest.RunLedger(t, newLedger) }

// TestLedgerTreeOverrun measures the overrun of 50 children against one
// small tree budget (docs/budgets.md quotes it): run with -v.
func TestLedgerTreeOverrun(t *testing.T) {
	r := storetest.ConcurrentTree(t, newLedger(t), 50, 2)
	t.Logf("children %d, limit %d tokens, reservation %d: spent %d, overrun %d (bound %d), most in flight %d, completions %d",
		r.Children, r.Limit, r.Reservation, r.Spent, r.Overrun, int64(r.Children)*r.Reservation, r.MaxInFlight, r.Completions)
}

// A dedup key is a thread ID, one space and a message ID, neither holding
// a space: a ledger key, with two spaces in a row, is never one.
func TestLedgerKeyIsNoDedupKey(t *testing.T) {
	if k := dedup.LedgerKey("root"); !strings.Contains(k, dedup.Separator+dedup.Separator) {
		t.Fatalf("ledger key %q could be a dedup key", k)
	}
}
