package testenv

import (
	"testing"
)

// fakeTB records how Need ended without ending the real test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (f *fakeTB) Helper()                       {}
func (f *fakeTB) Skipf(format string, a ...any) { f.skipped = true; f.msg = format }
func (f *fakeTB) Fatalf(format string, a ...any) {
	f.failed = true
	f.msg = format
}

func TestNeed(t *testing.T) {
	tests := []struct {
		name          string
		value, strict string
		want          string
		skip, fail    bool
	}{
		{name: "set", value: "http://127.0.0.1:1", want: "http://127.0.0.1:1"},
		{name: "set strict", value: "x", strict: "1", want: "x"},
		{name: "unset skips", skip: true},
		{name: "blank skips", value: "  ", skip: true},
		{name: "unset strict fails", strict: "1", fail: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AGENTSLICE_TEST_SQS_ENDPOINT", tc.value)
			t.Setenv(RequireVar, tc.strict)
			f := &fakeTB{TB: t}
			got := Need(f, "AGENTSLICE_TEST_SQS_ENDPOINT")
			if got != tc.want || f.skipped != tc.skip || f.failed != tc.fail {
				t.Fatalf("Need = %q skipped=%v failed=%v, want %q skipped=%v failed=%v",
					got, f.skipped, f.failed, tc.want, tc.skip, tc.fail)
			}
		})
	}
}
