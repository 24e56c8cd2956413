package disk

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A slice's load (LoadLeased) of a compacted thread starts at its view
// start and holds only the items from there on, so a long thread's loads
// stay the size of its view; a plain Load still returns everything. (The
// conformance suite allows a store to start at 0; this store promises the
// view.)
func TestLeasedLoadStartsAtTheViewStart(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s := d.History()
	add := make([]runtime.Item, 10)
	for i := range add {
		add[i] = runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("u%d", i), Text: fmt.Sprint(i)}
	}
	add[8] = runtime.Item{Kind: runtime.ItemSummary, Input: "sum", Text: "summary", Args: `{"covers":8}`}
	if err = s.Commit(ctx, &runtime.Commit{ThreadID: "t", Append: add,
		State: runtime.ThreadState{Version: 1, Length: 10, Stack: []string{"t"}, ViewStart: 8}}); err != nil {
		t.Fatal(err)
	}
	th, err := s.LoadLeased(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if th.Base != 8 || len(th.Items) != 2 || th.Items[0].Input != "sum" {
		t.Fatalf("leased load: base %d, items %+v; want base 8 and the 2 items from the summary on", th.Base, th.Items)
	}
	s.Release("t", th.Lease)
	if full, err := s.Load(ctx, "t"); err != nil || full.Base != 0 || len(full.Items) != 10 {
		t.Fatalf("plain load: %v; want all 10 items from 0", err)
	}
}
