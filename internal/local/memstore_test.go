package local

import (
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
)

func TestHistoryStoreConformance(t *testing.T) {
	storetest.RunHistory(t, func(t *testing.T) runtime.HistoryStore { return NewHistoryStore() })
}

// The same suite with every thread frozen between steps: the cold tier must
// be lossless.
func TestHistoryStoreConformanceFrozen(t *testing.T) {
	storetest.RunHistory(t, func(t *testing.T) runtime.HistoryStore { return freezing{NewHistoryStore()} })
}

func TestDedupStoreConformance(t *testing.T) {
	storetest.RunDedup(t, func(t *testing.T) runtime.DedupStore { return NewDedupStore(time.Hour) })
}

// A leased view is appended to in place; a concurrent second loader gets a
// copy, and if it commits first the lessee's in-place writes must not reach
// the store, and the lessee's commit must conflict.
func TestLeaseAgainstConcurrentWriter(t *testing.T) {
	storetest.RunLease(t, func(t *testing.T) storetest.LeaseStore { return NewHistoryStore() })
}
