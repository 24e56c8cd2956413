package disk

import (
	"errors"
	"testing"
)

// A sealed record cut anywhere (a torn write at a crash) reads as torn,
// never as a record and never as a panic; whole, it reads with nothing
// left over, and the bytes after it are left for the next read.
func TestCutRecordIsTorn(t *testing.T) {
	put := func(b []byte) []byte { return append(b, recEnd, 'p', 'a', 'y', 'l', 'o', 'a', 'd') }
	rec := frame(nil, 8, put)
	seal(rec, 3)
	for k := range len(rec) {
		if p, _, err := unframe(rec[:k], 3); !errors.Is(err, errTorn) {
			t.Fatalf("cut to %d of %d bytes: payload %q, error %v; want errTorn", k, len(rec), p, err)
		}
	}
	two := append(append([]byte(nil), rec...), rec...)
	p, rest, err := unframe(two, 3)
	if err != nil || len(p) != 8 || len(rest) != len(rec) {
		t.Fatalf("two records: payload %q, %d bytes left, %v; want the 8-byte payload and the second record left", p, len(rest), err)
	}
}
