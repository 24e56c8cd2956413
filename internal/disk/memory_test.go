package disk

import (
	"context"
	"testing"
)

// A thread read from the database stays in memory (the shard's hot map)
// when no eviction ran meanwhile: its next load and its next commit are
// answered from memory, with no query.
func TestReadThreadStaysInMemory(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	commitN(t, d.History(), "t", 0, "one")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	h := open(t, dir).History()
	inMemory := func() bool {
		sh := h.shard("t")
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.hot["t"] != nil
	}
	if inMemory() {
		t.Fatal("a reopened store holds t in memory before any read")
	}
	if th, err := h.Load(context.Background(), "t"); err != nil || len(th.Items) != 1 {
		t.Fatalf("Load(t) = %+v, %v; want its one item", th, err)
	}
	if !inMemory() {
		t.Fatal("t was read from the database and not kept in memory: every load reads it again")
	}
	commitN(t, h, "t", 1, "two")
	if got := texts(t, h, "t"); got != "one,two" {
		t.Fatalf("t reads %q, want \"one,two\"", got)
	}
}
