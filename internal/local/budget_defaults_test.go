package local

import (
	"context"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Before any call reports usage, a call is assumed to cost EstimateTokens,
// 1000 when left at zero: with 1000 tokens a minute and a clock that
// stands still, the default lets one call through, and an estimate of 500
// lets two.
func TestBudgetEstimateTokensDefault(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		estimate, through int
	}{{0, 1}, {500, 2}} {
		calls := 0
		inner := modelFunc(func(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
			calls++ // reports no usage: the estimate stays
			return nil
		})
		g, err := Budgeted(inner, Budget{TokensPerMinute: 1000, EstimateTokens: tc.estimate, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		req := &runtime.CompletionRequest{ThreadID: "t"}
		for i := range tc.through {
			if err := g.Complete(context.Background(), req, discardTurn{}); err != nil {
				t.Fatalf("EstimateTokens %d: call %d: %v", tc.estimate, i, err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := g.Complete(ctx, req, discardTurn{}); err == nil || calls != tc.through {
			t.Fatalf("EstimateTokens %d: call %d in the same minute: err %v, %d calls reached the model; want it held back", tc.estimate, tc.through+1, err, calls)
		}
		g.Close()
	}
}
