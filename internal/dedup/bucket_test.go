package dedup_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/dedup"
)

// The shared bucket refills at its rate up to one minute's tokens, says how
// long to wait when short, and under concurrent takers hands out no more
// than it holds.
func TestTokenBucket(t *testing.T) {
	c, name := newTable(t)
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b, err := dedup.NewTokenBucket(c, name, 6000, clock)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if w, err := b.Take(ctx, "m", 5000); err != nil || w != 0 {
		t.Fatalf("first take: wait %v, %v", w, err)
	}
	w, err := b.Take(ctx, "m", 2000)
	if err != nil || w < 9*time.Second || w > 11*time.Second {
		t.Fatalf("short by 1000 of 100/s: wait %v (%v), want about 10s", w, err)
	}
	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	if w, err := b.Take(ctx, "m", 2000); err != nil || w != 0 {
		t.Fatalf("after the refill: wait %v, %v", w, err)
	}
	// A fresh model's bucket is full: 6000 tokens for 20 takers of 500.
	var got atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := b.Take(ctx, "other", 500)
			if err != nil {
				t.Error(err)
			}
			if w == 0 {
				got.Add(1)
			}
		}()
	}
	wg.Wait()
	if got.Load() != 12 {
		t.Fatalf("%d takers of 500 admitted from a bucket of 6000, want 12", got.Load())
	}
	if err := b.Give(ctx, "other", 500); err != nil {
		t.Fatal(err)
	}
	if w, _ := b.Take(ctx, "other", 500); w != 0 {
		t.Fatalf("the 500 given back could not be taken: wait %v", w)
	}
}

// Takers of one bucket do not make each other read again: 100 slices
// taking 5 times each at once from a bucket that covers them all are all
// admitted at the first try, none failing after lost races (the first
// version, a version check on every take, lost most of them), and the
// bucket holds exactly what they did not take.
func TestTokenBucketConcurrentTakersAllAdmitted(t *testing.T) {
	c, name := newTable(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b, err := dedup.NewTokenBucket(c, name, 1_000_000, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				w, err := b.Take(ctx, "m", 1000)
				if err != nil {
					t.Error(err)
					return
				}
				if w == 0 {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 500 {
		t.Fatalf("%d of 500 takes admitted from a bucket that covers them all", admitted.Load())
	}
	// 500,000 left: a take of 500,001 waits, one of 500,000 is admitted.
	if w, err := b.Take(ctx, "m", 500_001); err != nil || w == 0 {
		t.Fatalf("a take past what is left: wait %v, %v", w, err)
	}
	if w, err := b.Take(ctx, "m", 500_000); err != nil || w != 0 {
		t.Fatalf("a take of what is left: wait %v, %v", w, err)
	}
}
