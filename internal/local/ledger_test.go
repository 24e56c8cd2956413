package local_test

import (
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
)

func TestLedgerConformance(t *testing.T) {
	storetest.RunLedger(t, func(*testing.T) storetest.Ledger { return local.NewLedger() })
}
