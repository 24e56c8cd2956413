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
