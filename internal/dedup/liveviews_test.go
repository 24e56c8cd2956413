package dedup_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
)

func newLiveViews(t *testing.T, now func() time.Time) *dedup.LiveViews {
	t.Helper()
	c, name := newTable(t)
	lv, err := dedup.NewLiveViews(c, dedup.LiveViewsConfig{Table: name, TTL: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return lv
}

// TestLiveViewsConformance: the AWS receiver's live views on DynamoDB
// Local keep the same contract as serve's in-memory ones.
func TestLiveViewsConformance(t *testing.T) {
	raptest.RunLiveViewStore(t, func(t *testing.T) rap.LiveViewStore { return newLiveViews(t, nil) })
}

// TestLiveViewsExpire: a view and a mark not updated for the TTL are
// gone (ignored before DynamoDB's TTL removes them).
func TestLiveViewsExpire(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	lv := newLiveViews(t, clock)
	if err := lv.PutView(ctx, "thr_a", rap.LiveView{CallID: "call_1", ViewType: "log", Content: json.RawMessage(`1`), At: 1}); err != nil {
		t.Fatal(err)
	}
	if err := lv.MarkStarted(ctx, "thr_a", "call_1"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if vs, err := lv.Views(ctx, "thr_a"); err != nil || len(vs) != 0 {
		t.Fatalf("views after the TTL: %v, %v; want none", vs, err)
	}
	if ok, err := lv.Started(ctx, "thr_a", "call_1"); err != nil || ok {
		t.Fatalf("started after the TTL: %v, %v; want false", ok, err)
	}
	// An expired view does not block a new one with an older stamp.
	if err := lv.PutView(ctx, "thr_a", rap.LiveView{CallID: "call_1", ViewType: "log", Content: json.RawMessage(`2`), At: 0}); err != nil {
		t.Fatal(err)
	}
	if vs, _ := lv.Views(ctx, "thr_a"); len(vs) != 1 || string(vs[0].Content) != "2" {
		t.Fatalf("views %v, want the new one", vs)
	}
}

// TestLiveViewsRefuseWhatCannotBeKept: a view too large for an item, or
// IDs that cannot form a key, are refused with an error (the receiver
// then sends the view to history), never stored half.
func TestLiveViewsRefuseWhatCannotBeKept(t *testing.T) {
	ctx := context.Background()
	lv := newLiveViews(t, nil)
	big := json.RawMessage(`"` + strings.Repeat("x", dedup.MaxLiveViewBytes) + `"`)
	if err := lv.PutView(ctx, "thr_a", rap.LiveView{CallID: "call_1", ViewType: "log", Content: big, At: 1}); !errors.Is(err, dedup.ErrLiveViewTooLarge) {
		t.Fatalf("a %d-byte view: %v, want ErrLiveViewTooLarge", len(big), err)
	}
	if err := lv.PutView(ctx, "thr a", rap.LiveView{CallID: "call_1", ViewType: "log", Content: json.RawMessage(`1`)}); !errors.Is(err, dedup.ErrInvalidID) {
		t.Fatalf("a thread ID with a space: %v, want ErrInvalidID", err)
	}
	if vs, err := lv.Views(ctx, "thr_a"); err != nil || len(vs) != 0 {
		t.Fatalf("views %v, %v; want none", vs, err)
	}
}

// TestLiveViewsReadsEveryChunk: a thread with more views than six
// BatchGetItem requests of 100 reads them all (the retry bound counts
// unprocessed keys asked again, not chunks).
func TestLiveViewsReadsEveryChunk(t *testing.T) {
	ctx := context.Background()
	lv := newLiveViews(t, nil)
	const n = 610
	for i := range n {
		v := rap.LiveView{CallID: fmt.Sprintf("call_%d", i), ViewType: "log", Content: json.RawMessage(`1`), At: 1}
		if err := lv.PutView(ctx, "thr_a", v); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := lv.Views(ctx, "thr_a")
	if err != nil || len(vs) != n {
		t.Fatalf("%d views, %v; want %d", len(vs), err, n)
	}
}
