package runtime

import "testing"

// Cost adds up every kind of token at its price (millionths of a dollar):
// input, output, cache reads and cache writes; with InputIncludesCached the
// cached tokens are taken out of the input first.
func TestModelPriceCostCountsEveryKindOfToken(t *testing.T) {
	t.Parallel()
	p := ModelPrice{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	u := Usage{Input: 1000, Output: 100, Cached: 2000, CacheWrite: 400}
	// 1000*3 + 100*15 + 2000*0.3 + 400*3.75 = 3000 + 1500 + 600 + 1500
	if got := p.Cost(u); got != 6600 {
		t.Errorf("Cost = %d, want 6600", got)
	}
	p.InputIncludesCached = true
	u.Input = 3000 // 2000 of them cached: 1000 at the input price
	if got := p.Cost(u); got != 6600 {
		t.Errorf("Cost with InputIncludesCached = %d, want 6600", got)
	}
}

// A completion's tokens are the usage's Total when it reports one, else
// the sum of every kind.
func TestTokensOf(t *testing.T) {
	t.Parallel()
	if got := tokensOf(Usage{Input: 60, Output: 40, Total: 600}); got != 600 {
		t.Errorf("tokensOf with a Total = %d, want 600", got)
	}
	if got := tokensOf(Usage{Input: 1, Output: 2, Cached: 3, CacheWrite: 4}); got != 10 {
		t.Errorf("tokensOf without a Total = %d, want 10", got)
	}
}

// With budgets configured but no DefaultMaxOutputTokens, the estimate
// plans a whole completion of 4096 output tokens; with one, that many.
func TestEstimateDefaultOutput(t *testing.T) {
	t.Parallel()
	s := &slice{e: &Engine{Budgets: &Budgets{}}}
	if got := s.estimate().Tokens; got != 1+4096 {
		t.Errorf("estimate with no default output = %d tokens, want %d", got, 1+4096)
	}
	s.e.Budgets.DefaultMaxOutputTokens = 100
	if got := s.estimate().Tokens; got != 1+100 {
		t.Errorf("estimate with a default output of 100 = %d tokens, want %d", got, 1+100)
	}
}
