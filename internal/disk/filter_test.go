package disk

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

func TestIDFilterNeverMissesAnAddedID(t *testing.T) {
	f := newIDFilter(0)
	for i := range 5000 {
		f.add(fmt.Sprintf("t-%d", i))
	}
	fp := 0
	for i := range 5000 {
		if !f.mayHave(fmt.Sprintf("t-%d", i)) {
			t.Fatalf("t-%d was added but the filter says no", i)
		}
		if f.mayHave(fmt.Sprintf("u-%d", i)) {
			fp++
		}
	}
	if fp > 250 { // 5%: sized for 16,384 IDs, it holds 5,000
		t.Fatalf("%d false positives in 5,000", fp)
	}
}

// TestThreadsOutgrowingTheFilterAreFound: once more threads were written
// than the filter was sized for, it is rebuilt from the table, and every
// thread that left memory is still found.
func TestThreadsOutgrowingTheFilterAreFound(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	h := d.History()
	const n = filterMinIDs + 1000
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				id := fmt.Sprintf("t-%05d", i)
				err := h.Commit(ctx, &runtime.Commit{ThreadID: id, Expected: 0, Append: []runtime.Item{{Kind: runtime.ItemUser, Input: "u", Text: id}},
					State: runtime.ThreadState{Version: 1, Length: 1, Stack: []string{id}}})
				if err != nil {
					errs <- err
					return
				}
				if i%4000 == 0 {
					h.FreezeIdle(-1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	h.FreezeIdle(-1)
	if d.ids.cap < n {
		t.Fatalf("filter sized for %d IDs after %d threads: never rebuilt", d.ids.cap, n)
	}
	for i := 0; i < n; i += 97 {
		id := fmt.Sprintf("t-%05d", i)
		th, err := h.Load(ctx, id)
		if err != nil || th.State.Version != 1 || len(th.Items) != 1 || th.Items[0].Text != id {
			t.Fatalf("%s after leaving memory: %+v %v", id, th, err)
		}
	}
}
