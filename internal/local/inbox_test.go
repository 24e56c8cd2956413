package local

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// recInbox records what the system puts and marks done.
type recInbox struct {
	mu      sync.Mutex
	put     []string
	done    []string
	failPut error
}

func (r *recInbox) Put(ctx context.Context, msgs []runtime.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failPut != nil {
		return r.failPut
	}
	for _, m := range msgs {
		r.put = append(r.put, m.ID)
	}
	return nil
}

func (r *recInbox) Done(threadID string, ids []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = append(r.done, ids...)
	return nil
}

func (r *recInbox) lists() ([]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.put), slices.Clone(r.done)
}

// With an inbox, every accepted message (users', tools' results) is put
// before Send returns and marked done once its slice finished with it.
func TestInboxSeesEveryAcceptedMessage(t *testing.T) {
	in := &recInbox{}
	h := newHarness(t, simWithTool(), func(c *Config) { c.Inbox = in })
	h.send(user("t1", "u1", "run the tests"))
	h.wait()
	put, done := in.lists()
	calls := h.run.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d dispatches, want 1", len(calls))
	}
	res := runtime.DeriveID("res_", "t1", calls[0].CallID)
	if !slices.Equal(put, []string{"u1", res}) {
		t.Fatalf("put %v, want the user message then the tool result", put)
	}
	slices.Sort(put)
	slices.Sort(done)
	if !slices.Equal(put, done) {
		t.Fatalf("done %v, want every put message %v", done, put)
	}
}

// A message the inbox could not store is refused, and nothing runs.
func TestInboxFailureRefusesTheMessage(t *testing.T) {
	in := &recInbox{failPut: errors.New("disk full")}
	h := newHarness(t, simWithTool(), func(c *Config) { c.Inbox = in })
	err := h.sys.Send(context.Background(), user("t1", "u1", "hello"))
	if err == nil || !errors.Is(err, in.failPut) {
		t.Fatalf("Send = %v, want the inbox's error", err)
	}
	h.wait()
	if th, _ := h.store.Load(context.Background(), "t1"); th.State.Version != 0 {
		t.Fatalf("a refused message was processed: version %d", th.State.Version)
	}
}

// Kick runs a slice with no message: a committed outbox left unsent (the
// process died after the commit) is sent, with its IDs.
func TestKickSendsALeftOutbox(t *testing.T) {
	h := newHarness(t, simWithTool())
	msg := user("t2", "from-t1", "hello t2")
	err := h.store.Commit(context.Background(), &runtime.Commit{ThreadID: "t1", Expected: 0,
		Append: []runtime.Item{{Kind: runtime.ItemUser, Input: "u0", Text: "start"}},
		State:  runtime.ThreadState{Version: 1, Length: 1, Stack: []string{"t1"}, Outbox: []runtime.OutboxEntry{{Message: &msg}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.sys.Kick("t1"); err != nil {
		t.Fatal(err)
	}
	h.wait()
	if th, _ := h.store.Load(context.Background(), "t1"); len(th.State.Outbox) != 0 {
		t.Fatalf("t1's outbox still holds %d entries", len(th.State.Outbox))
	}
	got := h.history("t2")
	if len(got) == 0 || got[0].Input != "from-t1" {
		t.Fatalf("t2 did not get the outbox message: %s", kinds(got))
	}
}
