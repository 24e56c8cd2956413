package runtime

import "testing"

// A limit of zero tokens or zero dollars is no limit on that measure;
// reaching a limit is not passing it.
func TestSpendExceeds(t *testing.T) {
	for _, tc := range []struct {
		spend Spend
		limit Budget
		want  bool
	}{
		{Spend{Tokens: 100, Micros: 10}, Budget{}, false},
		{Spend{Tokens: 100, Micros: 10}, Budget{USD: 1}, false},             // no token limit
		{Spend{Tokens: 100, Micros: 2_000_000}, Budget{Tokens: 500}, false}, // no dollar limit
		{Spend{Tokens: 500}, Budget{Tokens: 500}, false},
		{Spend{Tokens: 501}, Budget{Tokens: 500}, true},
		{Spend{Micros: 1_000_000}, Budget{USD: 1}, false},
		{Spend{Micros: 1_000_001}, Budget{USD: 1}, true},
		{Spend{Tokens: 501, Micros: 1}, Budget{Tokens: 500, USD: 1}, true},
		{Spend{Tokens: 1, Micros: 1_000_001}, Budget{Tokens: 500, USD: 1}, true},
	} {
		if got := tc.spend.Exceeds(tc.limit); got != tc.want {
			t.Errorf("%+v.Exceeds(%+v) = %v, want %v", tc.spend, tc.limit, got, tc.want)
		}
	}
}
