package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentslice/agentslice/internal/disk"
)

// The quantiles every figure uses: the value at index q*len of the sorted
// values, negatives (a stage that could not be measured) left out.
func TestPercentiles(t *testing.T) {
	xs := make([]float64, 0, 200)
	for i := 200; i >= 1; i-- { // unsorted on purpose
		xs = append(xs, float64(i))
	}
	xs = append(xs, -1, -5)
	p50, p99, mx := percentiles(xs)
	if p50 != 101 || p99 != 199 || mx != 200 {
		t.Fatalf("percentiles of 1..200 = %v, %v, %v; want 101, 199, 200", p50, p99, mx)
	}
	if p50, p99, mx := percentiles([]float64{-1}); p50 != 0 || p99 != 0 || mx != 0 {
		t.Fatalf("percentiles of nothing measured = %v, %v, %v; want zeros", p50, p99, mx)
	}
}

// tailShare says how much of the slowest wake-ups' time one stage took:
// only the wake-ups at or above the p99 count, whatever the others spent.
func TestTailShare(t *testing.T) {
	var totals, commits []float64
	for range 99 { // fast wake-ups, all commit: they must not count
		totals, commits = append(totals, 1), append(commits, 1)
	}
	totals, commits = append(totals, 100), append(commits, 25) // the p99: a quarter commit
	if got := tailShare(totals, commits, 0.99); got != 0.25 {
		t.Fatalf("tail share = %v, want 0.25", got)
	}
	totals, commits = append(totals, 300, -1), append(commits, 225, 1) // two above the cut, one unmeasured
	if got := tailShare(totals, commits, 0.99); got != 250.0/400 {
		t.Fatalf("tail share = %v, want 250/400 (the 100 and the 300, not the unmeasured one)", got)
	}
	if got := tailShare(nil, nil, 0.99); got != 0 {
		t.Fatalf("tail share of nothing = %v, want 0", got)
	}
	if got := tailShare([]float64{1}, nil, 0.99); got != 0 {
		t.Fatalf("tail share of mismatched lists = %v, want 0", got)
	}
}

// The probe writes and syncs what it is asked to, in the directory asked,
// and leaves nothing there; bad counts are an error naming the flags.
func TestProbeFsync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // made by the probe
	var sizes []int64
	syncAndSee := func(f *os.File) error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		sizes = append(sizes, st.Size())
		return disk.SyncData(f)
	}
	s, err := probeFsync(dir, 20, 1000, syncAndSee)
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 20 || s.Bytes != 1000 || !(s.P50 <= s.P99 && s.P99 <= s.Max) {
		t.Fatalf("probe = %+v; want 20 appends of 1000 B, p50 <= p99 <= max", s)
	}
	if len(sizes) != 20 {
		t.Fatalf("%d syncs seen, want 20", len(sizes))
	}
	for i, n := range sizes {
		if n != int64(i+1)*1000 {
			t.Fatalf("file size at sync %d = %d, want %d (each append after the last)", i, n, (i+1)*1000)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) != 0 {
		t.Fatalf("probe left %v (%v) in its directory", ents, err)
	}
	for _, bad := range [][2]int{{0, 4096}, {10, 0}, {-1, -1}} {
		if _, err := probeFsync(dir, bad[0], bad[1], disk.SyncData); err == nil {
			t.Fatalf("probe of %d x %d B: no error", bad[0], bad[1])
		}
	}
}
