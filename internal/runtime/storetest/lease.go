package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// LeaseStore is a history store that lends its items (runtime.LeaseLoader).
type LeaseStore interface {
	runtime.HistoryStore
	runtime.LeaseLoader
}

// RunLease runs the lease tests: a leased view is appended to in place; a
// concurrent second loader gets a copy, and if it commits first the
// lessee's in-place writes must not reach the store and the lessee's commit
// must conflict; a plain load's copy never sees what a lessee writes.
func RunLease(t *testing.T, newStore func(t *testing.T) LeaseStore) {
	t.Run("AgainstConcurrentWriter", func(t *testing.T) { testLeaseAgainstConcurrentWriter(t, newStore(t)) })
	t.Run("InPlace", func(t *testing.T) { testLeaseInPlace(t, newStore(t)) })
}

func leaseCommit(t *testing.T, s runtime.HistoryStore, expected int64, add []runtime.Item, lease any) error {
	t.Helper()
	return s.Commit(context.Background(), &runtime.Commit{ThreadID: "t", Expected: expected, Append: add, Lease: lease,
		State: runtime.ThreadState{Version: expected + 1, Length: int(expected) + len(add), Stack: []string{"t"}}})
}

func testLeaseAgainstConcurrentWriter(t *testing.T, s LeaseStore) {
	ctx := context.Background()
	if err := leaseCommit(t, s, 0, []runtime.Item{{Kind: runtime.ItemUser, Input: "u0", Text: "zero"}}, nil); err != nil {
		t.Fatal(err)
	}
	a, err := s.LoadLeased(ctx, "t")
	if err != nil || a.Lease == nil {
		t.Fatalf("first leased load: lease %v err %v", a.Lease, err)
	}
	b, err := s.LoadLeased(ctx, "t")
	if err != nil || b.Lease != nil {
		t.Fatalf("second concurrent load got a lease too: %v", err)
	}
	// B wins.
	bItem := runtime.Item{Kind: runtime.ItemUser, Input: "ub", Text: "from b"}
	if err := leaseCommit(t, s, 1, []runtime.Item{bItem}, b.Lease); err != nil {
		t.Fatal(err)
	}
	// A appends in place, as the engine does, then tries to commit.
	aItem := runtime.Item{Kind: runtime.ItemUser, Input: "ua", Text: "from a"}
	a.Items = append(a.Items, aItem)
	if err := leaseCommit(t, s, 1, a.Items[1:], a.Lease); !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("lessee's stale commit: %v", err)
	}
	s.Release("t", a.Lease)
	got, _ := s.Load(ctx, "t")
	if len(got.Items) != 2 || got.Items[1].Input != "ub" {
		t.Fatalf("store holds %+v, want zero then b's item", got.Items)
	}
	// The lease is free again for the next slice.
	c, _ := s.LoadLeased(ctx, "t")
	if c.Lease == nil {
		t.Fatal("no lease after release")
	}
	s.Release("t", c.Lease)
}

func testLeaseInPlace(t *testing.T, s LeaseStore) {
	ctx := context.Background()
	if err := leaseCommit(t, s, 0, []runtime.Item{{Kind: runtime.ItemUser, Input: "u0", Text: "zero"}}, nil); err != nil {
		t.Fatal(err)
	}
	plain, _ := s.Load(ctx, "t")
	for v := int64(1); v <= 3; v++ {
		a, err := s.LoadLeased(ctx, "t")
		if err != nil || a.Lease == nil {
			t.Fatalf("leased load at %d: lease %v err %v", v, a.Lease, err)
		}
		a.Items = append(a.Items, runtime.Item{Kind: runtime.ItemAssistant, Text: "turn"})
		if err := leaseCommit(t, s, v, a.Items[v:], a.Lease); err != nil {
			t.Fatal(err)
		}
		s.Release("t", a.Lease)
	}
	got, _ := s.Load(ctx, "t")
	if len(got.Items) != 4 || got.State.Version != 4 || got.Items[3].Text != "turn" {
		t.Fatalf("after three leased commits: %d items at version %d", len(got.Items), got.State.Version)
	}
	if len(plain.Items) != 1 || plain.Items[0].Text != "zero" {
		t.Fatalf("an earlier plain load changed: %+v", plain.Items)
	}
}
