package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The fsync probe (issue 35): the wake-up target is about 10 ms, and a
// wake-up's reply is committed through the disk store's journal, one
// fdatasync per group commit. What the data directory's disk takes for
// such a sync bounds what the durable store can answer, whatever the
// product does, so the probe measures it on the same filesystem before
// anything else runs: n appends of size bytes, each followed by an
// fdatasync, exactly as internal/disk/journal.go writes a fresh segment
// (os.OpenFile with O_WRONLY|O_CREATE|O_EXCL and mode 0600, the directory
// synced after the create, WriteAt at the end of what is written), each
// sync through disk.SyncData, the journal's own sync call. A journal that reuses its spare
// segment writes over blocks already allocated, which syncs faster (see
// journal.go); the probe measures the growing file, the slower case.

// fsyncStats is what the probe measured; the times are in ms.
type fsyncStats struct {
	N     int     `json:"n"`
	Bytes int     `json:"bytes_each"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func (s fsyncStats) String() string {
	return fmt.Sprintf("fdatasync of %d B appends (%d): p50 %.2f ms, p99 %.2f ms, max %.2f ms", s.Bytes, s.N, s.P50, s.P99, s.Max)
}

// probeFsync appends n records of size bytes to a new file in dir, each
// followed by sync (fdatasync; a test's wraps it) timed on its own, and
// removes the file.
func probeFsync(dir string, n, size int, sync func(*os.File) error) (fsyncStats, error) {
	if n <= 0 || size <= 0 {
		return fsyncStats{}, fmt.Errorf("fsync probe: %d appends of %d bytes: both must be positive (-fsync-probe, -fsync-probe-bytes)", n, size)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fsyncStats{}, fmt.Errorf("fsync probe: making %s: %w", dir, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("fsync-probe-%d.log", os.Getpid()))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fsyncStats{}, fmt.Errorf("fsync probe: creating %s (remove it if an earlier probe left it): %w", path, err)
	}
	defer os.Remove(path)
	defer f.Close()
	if err := syncDirOf(dir); err != nil {
		return fsyncStats{}, err
	}
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i) // not zeros: no filesystem may treat the blocks as holes
	}
	took := make([]float64, 0, n)
	var off int64
	for range n {
		if _, err := f.WriteAt(buf, off); err != nil {
			return fsyncStats{}, fmt.Errorf("fsync probe: writing %s: %w", path, err)
		}
		off += int64(size)
		t0 := time.Now()
		if err := sync(f); err != nil {
			return fsyncStats{}, fmt.Errorf("fsync probe: fdatasync of %s: %w", path, err)
		}
		took = append(took, ms(time.Since(t0)))
	}
	s := fsyncStats{N: n, Bytes: size}
	s.P50, s.P99, s.Max = percentiles(took)
	return s, nil
}

// syncDirOf makes the probe file's directory entry durable, as the journal
// does for each new segment (and so that its first sync is not also the
// directory's).
func syncDirOf(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync probe: opening %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync probe: syncing directory %s: %w", dir, err)
	}
	return nil
}

// tailShare is the share of the slowest wake-ups' time spent in one stage:
// over the wake-ups whose total is at or above the total's q quantile (as
// percentiles picks it), the sum of part over the sum of total. totals and
// parts are per wake-up, in the same order; a negative or missing total is
// left out, as percentiles does.
func tailShare(totals, parts []float64, q float64) float64 {
	if len(totals) != len(parts) {
		return 0
	}
	var ok []float64
	for _, x := range totals {
		if x >= 0 {
			ok = append(ok, x)
		}
	}
	if len(ok) == 0 {
		return 0
	}
	cut := quantile(ok, q)
	var sumT, sumP float64
	for i, x := range totals {
		if x >= 0 && x >= cut {
			sumT += x
			sumP += max(parts[i], 0)
		}
	}
	if sumT == 0 {
		return 0
	}
	return sumP / sumT
}
