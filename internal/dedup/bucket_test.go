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
