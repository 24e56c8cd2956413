package model

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestWorstCaseCompletion(t *testing.T) {
	tests := []struct {
		name   string
		tokens int
		rate   float64
		want   time.Duration
	}{
		{"8192 tokens at 20/s", 8192, 20, FirstTokenAllowance + 410*time.Second},
		{"default rate", 4500, 0, FirstTokenAllowance + 300*time.Second},
		{"fast model", 1000, 100, FirstTokenAllowance + 10*time.Second},
		{"rounds up", 1001, 100, FirstTokenAllowance + 11*time.Second},
		{"absurd size does not overflow", math.MaxInt, 1e-300, FirstTokenAllowance + time.Duration(math.MaxInt64/int64(time.Second)/2)*time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{MaxOutputTokens: tc.tokens, MinOutputTokensPerSecond: tc.rate}
			if got := c.WorstCaseCompletion(); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMinOutputRateValidated(t *testing.T) {
	for _, r := range []float64{-1, math.NaN(), math.Inf(1)} {
		c := Config{Provider: ProviderOpenAI, ModelID: "m", ContextWindow: 100, MaxOutputTokens: 10, MinOutputTokensPerSecond: r}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "min_output_tokens_per_second") {
			t.Errorf("rate %v: got %v", r, err)
		}
	}
	b := []byte(`{"provider":"openai","model_id":"m","context_window":100,"max_output_tokens":10,"min_output_tokens_per_second":25}`)
	c, err := DecodeConfig(b)
	if err != nil || c.MinOutputTokensPerSecond != 25 {
		t.Fatalf("got %+v, %v", c, err)
	}
}
