package local

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
)

func TestHistoryStoreConformance(t *testing.T) {
	storetest.RunHistory(t, func(t *testing.T) runtime.HistoryStore { return NewHistoryStore() })
}

// The same suite with every thread frozen between steps: the cold tier must
// be lossless.
func TestHistoryStoreConformanceFrozen(t *testing.T) {
	storetest.RunHistory(t, func(t *testing.T) runtime.HistoryStore { return freezing{NewHistoryStore()} })
}

func TestDedupStoreConformance(t *testing.T) {
	storetest.RunDedup(t, func(t *testing.T) runtime.DedupStore { return NewDedupStore(time.Hour) })
}

// A leased view is appended to in place; a concurrent second loader gets a
// copy, and if it commits first the lessee's in-place writes must not reach
// the store, and the lessee's commit must conflict.
func TestLeaseAgainstConcurrentWriter(t *testing.T) {
	storetest.RunLease(t, func(t *testing.T) storetest.LeaseStore { return NewHistoryStore() })
}

// A leased load may reuse the Thread of a lease given back with Release, but
// never one whose lease was revoked while its holder may still read it.
func TestLeasedThreadReusedOnlyAfterRelease(t *testing.T) {
	ctx := context.Background()
	s := NewHistoryStore()
	commit := func(v int64, lease any) {
		t.Helper()
		it := runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("u%d", v), Text: "x"}
		if err := s.Commit(ctx, &runtime.Commit{ThreadID: "t", Expected: v, Append: []runtime.Item{it},
			State: runtime.ThreadState{Version: v + 1, Length: int(v) + 1, Stack: []string{"t"}}, Lease: lease}); err != nil {
			t.Fatal(err)
		}
	}
	commit(0, nil)
	a, _ := s.LoadLeased(ctx, "t")
	s.Release("t", a.Lease)
	b, _ := s.LoadLeased(ctx, "t")
	if b != a {
		t.Fatal("the Thread of a released lease was not reused")
	}
	// A writer without the lease revokes b's; the next lease must not hand
	// out b's Thread, which b's holder may still be reading.
	commit(1, nil)
	bItems, bVersion := len(b.Items), b.State.Version
	c, _ := s.LoadLeased(ctx, "t")
	if c == b || c.Lease == nil {
		t.Fatalf("leased load after a revoked lease: same Thread %v, lease %v", c == b, c.Lease)
	}
	s.Release("t", b.Lease) // the revoked holder ends: ignored
	s.Release("t", c.Lease)
	d, _ := s.LoadLeased(ctx, "t")
	if d == b {
		t.Fatal("a revoked lease's Thread was handed out again")
	}
	if len(b.Items) != bItems || b.State.Version != bVersion {
		t.Fatalf("the revoked holder's Thread changed under it: %d items, version %d", len(b.Items), b.State.Version)
	}
}

// A leased view's room to append: fourfold for a short thread (fewer
// copies on the way to freezing), twofold for a long one (spare slots at
// most the thread's own size).
func TestLeasedViewGrowth(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{100, 2 * fourfoldItems} {
		s := NewHistoryStore()
		items := make([]runtime.Item, n)
		for i := range items {
			items[i] = runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("u%d", i), Text: "x"}
		}
		if err := s.Commit(ctx, &runtime.Commit{ThreadID: "t", Expected: 0, Append: items,
			State: runtime.ThreadState{Version: 1, Length: n, Stack: []string{"t"}}}); err != nil {
			t.Fatal(err)
		}
		th, err := s.LoadLeased(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		c := cap(th.Items)
		if n < fourfoldItems && c < 4*n {
			t.Fatalf("%d items: room for %d, want fourfold", n, c)
		}
		// Go's append rounds a large slice's growth up by about a sixth.
		if n >= fourfoldItems && (c < 2*n || c > 5*n/2) {
			t.Fatalf("%d items: room for %d, want about twofold", n, c)
		}
	}
}

func TestAgentStoreConformance(t *testing.T) {
	storetest.RunAgents(t, func(t *testing.T) runtime.AgentStore { return &AgentStore{} })
}
