package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// failuresOnly is an observer whose filter wants only events with an error.
type failuresOnly struct {
	mu  sync.Mutex
	got []Event
}

func (f *failuresOnly) Wants(t EventType, failed bool) bool { return failed }

func (f *failuresOnly) Observe(ctx context.Context, ev Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, ev)
}

// A slice asks the observer's filter with the event's own error flag: a
// failures-only observer gets the failed event and not the clean one.
func TestObserveAsksTheFilterWithTheEventsError(t *testing.T) {
	t.Parallel()
	obs := &failuresOnly{}
	s := &slice{e: &Engine{Observer: obs}, res: &SliceResult{}, threadID: "t1"}
	s.observe(context.Background(), Event{Type: EventModelWaiting, ThreadID: "t1", Reason: "clean"})
	s.observe(context.Background(), Event{Type: EventModelWaiting, ThreadID: "t1", Reason: "failed", Err: errors.New("429")})
	if len(obs.got) != 1 || obs.got[0].Reason != "failed" {
		var reasons []string
		for _, ev := range obs.got {
			reasons = append(reasons, ev.Reason)
		}
		t.Fatalf("a failures-only observer got %v, want only the failed event", reasons)
	}
}
