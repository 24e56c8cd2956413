package runtime

import (
	"testing"
	"time"
)

// Limits left at zero (or below) take their defaults; limits set are
// kept.
func TestLimitsDefaults(t *testing.T) {
	want := Limits{MaxCompletions: 8, DeadlineMargin: 2 * time.Second, ModelAttempts: 4, RetryBase: 200 * time.Millisecond}
	if got := (Limits{}).withDefaults(); got != want {
		t.Errorf("Limits{}.withDefaults() = %+v, want %+v", got, want)
	}
	if got := (Limits{MaxCompletions: -1, DeadlineMargin: -1, ModelAttempts: -1, RetryBase: -1}).withDefaults(); got != want {
		t.Errorf("negative limits: withDefaults() = %+v, want %+v", got, want)
	}
	set := Limits{MaxCompletions: 3, DeadlineMargin: 5 * time.Second, ModelAttempts: 1, RetryBase: time.Second}
	if got := set.withDefaults(); got != set {
		t.Errorf("withDefaults() of %+v = %+v, want it unchanged", set, got)
	}
}
