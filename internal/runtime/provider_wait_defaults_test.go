package runtime

import (
	"testing"
	"time"
)

// ProviderWait's durations left at zero take their defaults; durations
// set are kept, except an interval shorter than the first wait, which
// becomes the first wait.
func TestProviderWaitDefaults(t *testing.T) {
	if got := (ProviderWait{}).WithDefaults(); got.First != ProviderWaitFirstDefault ||
		got.Interval != ProviderWaitIntervalDefault || got.MaxWait != ProviderWaitMaxDefault {
		t.Errorf("ProviderWait{}.WithDefaults() = %+v", got)
	}
	set := ProviderWait{First: time.Minute, Interval: time.Hour, MaxWait: 48 * time.Hour}
	if got := set.WithDefaults(); got != set {
		t.Errorf("WithDefaults() of %+v = %+v, want it unchanged", set, got)
	}
	if got := (ProviderWait{First: time.Hour, Interval: time.Minute}).WithDefaults(); got.Interval != time.Hour {
		t.Errorf("an interval shorter than the first wait: %v, want the first wait (1h)", got.Interval)
	}
}
