package server

import (
	"context"
	"testing"
	"time"
)

// Watched says whether a thread's events have a reader: its own
// subscribers or those of every thread, as they come and go (unsubscribed
// or dropped for falling behind).
func TestBroadcasterWatched(t *testing.T) {
	ctx := context.Background()
	b := NewBroadcaster(1, nil)
	if b.Watched("a") {
		t.Fatal("watched with no subscriber")
	}
	a, err := b.Subscribe("a")
	if err != nil {
		t.Fatal(err)
	}
	if !b.Watched("a") || b.Watched("b") {
		t.Fatalf("one subscriber to a: Watched(a) %v, Watched(b) %v", b.Watched("a"), b.Watched("b"))
	}
	all, err := b.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	if !b.Watched("b") {
		t.Fatal("b not watched with a subscriber to every thread")
	}
	b.Unsubscribe(all)
	if b.Watched("b") || !b.Watched("a") {
		t.Fatalf("after the every-thread subscriber left: Watched(b) %v, Watched(a) %v", b.Watched("b"), b.Watched("a"))
	}
	slow, err := b.Subscribe("")
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Publish(ctx, reply("c", "1"))
	_ = b.Publish(ctx, reply("c", "2")) // past its buffer of 1: dropped
	if !b.Dropped(slow) || b.Watched("b") {
		t.Fatalf("dropped %v, Watched(b) %v after the every-thread subscriber was dropped", b.Dropped(slow), b.Watched("b"))
	}
	b.Unsubscribe(a)
	if b.Watched("a") {
		t.Fatal("a watched after its subscriber left")
	}
}

// With a subscriber to every thread (serve's console and the harnesses'
// streams), Watched answers without the broadcaster's lock, which every
// publish and every subscription change takes: the engine's observer asks
// it for each event of each slice.
func TestBroadcasterWatchedTakesNoLockForEveryThread(t *testing.T) {
	b := NewBroadcaster(8, nil)
	if _, err := b.Subscribe(""); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	got := make(chan bool, 1)
	go func() { got <- b.Watched("t") }() // ends at once, or when the test unlocks
	select {
	case w := <-got:
		if !w {
			t.Fatal("t not watched with a subscriber to every thread")
		}
	case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("Watched waited for the broadcaster's lock")
	}
}
