package disk

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

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

// TestFilterFilledAfterOpen: Open does not wait for the thread filter
// (a scan of every thread ID); until it is filled it says "maybe" for
// every ID (a stored thread is never missed), and once filled it says
// "no" for an ID never written and "maybe" for every stored one.
func TestFilterFilledAfterOpen(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	for i := range 50 {
		commitN(t, d.History(), fmt.Sprintf("t%d", i), 0, "x")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openUnmanaged(t, dir)
	defer d.Close()
	if th, err := d.History().Load(context.Background(), "t7"); err != nil || len(th.Items) != 1 {
		t.Fatalf("load right after Open: %v, %v", th, err)
	}
	select {
	case <-d.ids.filled:
	case <-time.After(time.Minute):
		t.Fatal("the filter was not filled in a minute")
	}
	if d.ids.filling {
		t.Fatal("the fill ended with the filter still filling")
	}
	for i := range 50 {
		if !d.ids.mayHave(fmt.Sprintf("t%d", i)) {
			t.Fatalf("filled filter misses stored thread t%d", i)
		}
	}
	if d.ids.mayHave("never-written") && d.ids.mayHave("never-written-2") && d.ids.mayHave("never-written-3") {
		t.Fatal("filled filter says maybe for every unknown ID")
	}
}

// add reports the filter over capacity only once it holds more IDs than it
// was sized for: a filter that always said so would be rebuilt from the
// threads table (a scan of every thread ID) by every checkpoint that adds
// a thread.
func TestIDFilterIsFullOnlyPastItsCapacity(t *testing.T) {
	f := newIDFilter(0)
	for i := range f.cap {
		if f.add(fmt.Sprintf("t-%d", i)) {
			t.Fatalf("add reported the filter over capacity at %d IDs of %d", i+1, f.cap)
		}
	}
	if !f.add("one-more") {
		t.Fatalf("add did not report the filter over capacity at %d IDs of %d", f.cap+1, f.cap)
	}
}
