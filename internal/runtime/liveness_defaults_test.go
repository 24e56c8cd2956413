package runtime

import (
	"testing"
	"time"
)

// Liveness's zero fields take the documented defaults; set fields stay.
func TestLivenessDefaults(t *testing.T) {
	t.Parallel()
	want := Liveness{Deadline: time.Hour, LongRunningDeadline: 24 * time.Hour, CheckAfter: 10 * time.Minute,
		MaxCheckInterval: time.Hour, StatusTimeout: 10 * time.Second}
	if got := (Liveness{}).WithDefaults(); got != want {
		t.Errorf("Liveness{}.WithDefaults() = %+v, want %+v", got, want)
	}
	set := Liveness{Deadline: time.Minute, LongRunningDeadline: 2 * time.Minute, CheckAfter: time.Second,
		MaxCheckInterval: 3 * time.Second, StatusTimeout: time.Millisecond}
	if got := set.WithDefaults(); got != set {
		t.Errorf("WithDefaults() of %+v = %+v, want it unchanged", set, got)
	}
}
