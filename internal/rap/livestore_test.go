package rap_test

import (
	"testing"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
)

// TestMemoryLiveViewStore: serve's in-memory live views keep the
// LiveViewStore contract (the DynamoDB one runs the same suite in
// internal/dedup).
func TestMemoryLiveViewStore(t *testing.T) {
	raptest.RunLiveViewStore(t, func(*testing.T) rap.LiveViewStore { return rap.NewMemoryLiveViews(100) })
}
