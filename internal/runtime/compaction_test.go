package runtime

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapSummary(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 100) // two bytes each
	for _, tc := range []struct {
		name  string
		text  string
		limit int
		cut   bool
	}{
		{"no limit", long, 0, false},
		{"fits", "short", 40, false},
		{"exactly", strings.Repeat("a", 40), 40, false},
		{"cut on a character boundary", long, 61, true},
		{"cut below the note's length", long, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := capSummary(tc.text, tc.limit)
			if !tc.cut {
				if got != tc.text {
					t.Fatalf("changed a summary within the limit: %q", got)
				}
				return
			}
			if !utf8.ValidString(got) {
				t.Fatalf("cut inside a character: %q", got)
			}
			if !strings.Contains(got, "summary cut at") {
				t.Fatalf("no note of the cut: %q", got)
			}
			if tc.limit > 40 && len(got) > tc.limit {
				t.Fatalf("%d bytes, limit %d", len(got), tc.limit)
			}
		})
	}
}
