package disk

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"
)

// FreezeIdle drops the threads that have not committed or loaded for at
// least idle, on the store's clock, and keeps the others in memory; a
// dropped thread reads back whole. Checkpoints that succeed log no
// warning.
func TestFreezeIdleDropsOnlyIdleThreads(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	d, err := Open(context.Background(), t.TempDir(), Options{Now: func() time.Time { return now }, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	h := d.History()
	commitN(t, h, "old", 0, "o1")
	now = now.Add(30 * time.Minute)
	commitN(t, h, "new", 0, "n1")
	now = now.Add(30 * time.Minute) // old: idle an hour; new: half an hour
	if n := h.FreezeIdle(time.Hour); n != 1 {
		t.Fatalf("FreezeIdle(1h) with one thread idle for exactly 1h: dropped %d, want 1", n)
	}
	if n := h.FreezeIdle(time.Hour); n != 0 {
		t.Fatalf("FreezeIdle(1h) again, the other thread idle for 30m: dropped %d, want 0", n)
	}
	now = now.Add(30 * time.Minute)
	if n := h.FreezeIdle(time.Hour); n != 1 {
		t.Fatalf("FreezeIdle(1h) 30m later: dropped %d, want 1", n)
	}
	for id, want := range map[string]string{"old": "o1", "new": "n1"} {
		if got := texts(t, h, id); got != want {
			t.Errorf("thread %s after freezing: %q, want %q", id, got, want)
		}
	}
	if logged.Len() > 0 {
		t.Errorf("warnings from checkpoints that succeeded:\n%s", logged.String())
	}
}
