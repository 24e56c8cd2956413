package local

import (
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// A message sent without a time gets the system's clock when it is sent:
// its item keeps that arrival, and the time it waited until its slice
// began (Item.Took). The clock here moves a second at every reading, so
// the slice begins after the send.
func TestSendStampsArrival(t *testing.T) {
	var mu sync.Mutex
	now := harnessClock()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	h := newHarness(t, &model.Sim{Chunks: 1}, func(c *Config) { c.Now = clock })
	h.send(user("t", "u1", "hello"))
	h.waitReplies(1)
	items := h.history("t")
	if len(items) < 2 || items[0].Kind != runtime.ItemUser {
		t.Fatalf("history %s: want the user's item and a reply", kinds(items))
	}
	if u := items[0]; u.At == 0 || u.Took == 0 || u.At >= items[1].At {
		t.Fatalf("the user's item: arrival %d, waited %d ms, reply at %d; want the arrival at the send, before the reply, and a wait", u.At, u.Took, items[1].At)
	}
}
