package runtime

import (
	"strconv"
	"testing"
	"time"
)

// sleep takes any positive number of seconds up to MaxSleep, that bound
// included, and wakes that long after now.
func TestSleepSecondsBounds(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &sleeper{kind: "sleep", now: func() time.Time { return now }}
	limit := int64(MaxSleep / time.Second)
	for _, tc := range []struct {
		args string
		want time.Time // zero: an error
	}{
		{`{"seconds":0.5}`, now.Add(500 * time.Millisecond)},
		{`{"seconds":` + strconv.FormatInt(limit, 10) + `}`, now.Add(MaxSleep)},
		{`{"seconds":` + strconv.FormatInt(limit+1, 10) + `}`, time.Time{}},
		{`{"seconds":0}`, time.Time{}},
		{`{"seconds":-1}`, time.Time{}},
		{`{}`, time.Time{}},
	} {
		got, err := s.wakeAt(tc.args)
		if tc.want.IsZero() {
			if err == nil {
				t.Errorf("wakeAt(%s) = %v, want an error", tc.args, got)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("wakeAt(%s) = %v, %v; want %v", tc.args, got, err, tc.want)
		}
	}
}
