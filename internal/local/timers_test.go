package local

import (
	"context"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

type chanQueue chan runtime.Message

func (q chanQueue) Send(ctx context.Context, msgs ...runtime.Message) error {
	for _, m := range msgs {
		q <- m
	}
	return nil
}

func TestTimersDeliverCancelAndStop(t *testing.T) {
	q := make(chanQueue, 4)
	tm := NewTimers(q)
	defer tm.Stop()
	wake := runtime.Message{V: 1, ID: "w1", ThreadID: "t", Kind: runtime.KindWake, ToolCallID: "c1"}
	if err := tm.Schedule(context.Background(), runtime.Timer{ThreadID: "t", CallID: "c1", At: time.Now(), Message: wake}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-q:
		if m.ID != "w1" {
			t.Fatalf("delivered %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a due timer did not fire")
	}
	// A far timer is armed until cancelled, then gone.
	far := runtime.Timer{ThreadID: "t", CallID: "c2", At: time.Now().Add(time.Hour), Message: wake}
	if err := tm.Schedule(context.Background(), far); err != nil {
		t.Fatal(err)
	}
	if err := tm.Schedule(context.Background(), far); err != nil { // same call again: replaces
		t.Fatal(err)
	}
	if n := tm.Pending(); n != 1 {
		t.Fatalf("%d timers armed, want 1", n)
	}
	if err := tm.Cancel(context.Background(), "t", "c2"); err != nil {
		t.Fatal(err)
	}
	if n := tm.Pending(); n != 0 {
		t.Fatalf("%d timers armed after cancel", n)
	}
	if err := tm.Schedule(context.Background(), far); err != nil {
		t.Fatal(err)
	}
	tm.Stop()
	tm.Stop()
	if n := tm.Pending(); n != 0 {
		t.Fatalf("%d timers armed after stop", n)
	}
	if err := tm.Schedule(context.Background(), far); err == nil {
		t.Fatal("schedule after stop accepted")
	}
}
