package local

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Many senders, many threads across the mailbox shards: every message is
// consumed exactly once, in each thread's send order, the system goes idle
// with no thread active, and a Send after Stop is refused.
func TestShardedMailboxesUnderConcurrentSenders(t *testing.T) {
	h := newHarness(t, &model.Sim{Chunks: 1})
	const senders, threads, perThread = 8, 200, 5
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for th := s; th < threads; th += senders {
				id := fmt.Sprintf("shard-t%03d", th)
				for i := range perThread {
					if err := h.sys.Send(context.Background(), user(id, fmt.Sprintf("m%d", i), "hello")); err != nil {
						t.Errorf("send: %v", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	h.wait()
	if n := h.sys.Active(); n != 0 {
		t.Fatalf("%d threads active after idle", n)
	}
	for th := range threads {
		id := fmt.Sprintf("shard-t%03d", th)
		got, err := h.store.Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var inputs []string
		for _, it := range got.Items {
			if it.Kind == runtime.ItemUser {
				inputs = append(inputs, it.Input)
			}
		}
		if fmt.Sprint(inputs) != "[m0 m1 m2 m3 m4]" {
			t.Fatalf("%s consumed %v, want m0..m4 once each in order", id, inputs)
		}
	}
	h.sys.Stop()
	if err := h.sys.Send(context.Background(), user("shard-t000", "late", "hello")); err == nil {
		t.Fatal("Send after Stop accepted")
	}
}
