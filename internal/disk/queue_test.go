package disk

import (
	"context"
	"path/filepath"
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

func msg(thread, id string) runtime.Message {
	return runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindUser, Text: "text " + id}
}

func TestInboxSurvivesRestartInOrder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := d.Inbox()
	for _, m := range []runtime.Message{msg("a", "1"), msg("b", "2"), msg("a", "3"), msg("a", "1")} {
		if err := in.Put(ctx, []runtime.Message{m}); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Done("b", []string{"2"}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d = open(t, dir)
	got, err := d.Inbox().Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "1" || got[1].ID != "3" || got[0].Text != "text 1" {
		t.Fatalf("pending after restart: %+v (want a/1 then a/3, the retry of 1 kept once, b/2 consumed)", got)
	}
}

func TestTimersRearmAfterRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := make(chanQueue, 10)
	tm := d.Timers(q)
	now := time.Now()
	wake := func(call string, at time.Time) runtime.Timer {
		return runtime.Timer{ThreadID: "t", CallID: call, At: at,
			Message: runtime.Message{V: 1, ID: "wake-" + call, ThreadID: "t", Kind: runtime.KindWake, ToolCallID: call}}
	}
	for _, w := range []runtime.Timer{wake("far", now.Add(2*time.Hour)), wake("cancelled", now.Add(time.Hour))} {
		if err := tm.Schedule(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := tm.Cancel(ctx, "t", "cancelled"); err != nil {
		t.Fatal(err)
	}
	tm.Stop()
	// A sleep whose time passed while the process was down: its row, as
	// Schedule writes it, without arming it here.
	due := wake("due", now.Add(-time.Minute))
	body, _ := jsonMarshal(due.Message)
	if err := d.w.do(ctx, &wreq{fn: func(w *wconn) error {
		_, err := w.exec(`INSERT INTO timers (thread, call, at, body) VALUES (?, ?, ?, ?)`, "t", "due", due.At.UnixNano(), body)
		return err
	}}); err != nil {
		t.Fatal(err)
	}
	d.Close()

	d = open(t, dir)
	tm = d.Timers(q)
	defer tm.Stop()
	n, err := tm.Rearm(ctx)
	if err != nil || n.Total() != 2 || n.Sleeps != 2 {
		t.Fatalf("Rearm: %+v, %v; want 2 sleeps (due, far)", n, err)
	}
	select {
	case m := <-q:
		if m.ID != "wake-due" {
			t.Fatalf("fired %s, want wake-due", m.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a timer due in the past did not fire at once")
	}
	if tm.Pending() != 1 {
		t.Fatalf("%d timers armed, want 1 (far)", tm.Pending())
	}
}

func TestOnlineBackupOpens(t *testing.T) {
	ctx := context.Background()
	d := open(t, t.TempDir())
	c := &runtime.Commit{ThreadID: "b", Expected: 0, Append: []runtime.Item{{Kind: runtime.ItemUser, Input: "u1", Text: "keep me"}},
		State: runtime.ThreadState{Version: 1, Length: 1, Stack: []string{"b"}}}
	if err := d.History().Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	restored := t.TempDir()
	if err := d.Backup(ctx, filepath.Join(restored, FileName)); err != nil {
		t.Fatal(err)
	}
	r := open(t, restored)
	th, err := r.History().Load(ctx, "b")
	if err != nil || th.State.Version != 1 || len(th.Items) != 1 || th.Items[0].Text != "keep me" {
		t.Fatalf("thread in the restored backup: %+v %v", th, err)
	}
}

// A fired timer whose key is not its message's call ID (a liveness check,
// a provider wait) forgets its row: a clean restart re-arms nothing (it
// once reported sleeps_rearmed=8 with nothing asleep).
func TestFiredTimersAreNotRearmed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := open(t, dir)
	q := make(chan runtime.Message, 4)
	tm := d.Timers(chanQueue(q))
	past := time.Now().Add(-time.Second)
	for _, x := range []runtime.Timer{
		{ThreadID: "t", CallID: "chk1~c1", At: past, Message: runtime.Message{V: 1, ID: "chk-1", ThreadID: "t", Kind: runtime.KindCheck, ToolCallID: "c1", Text: "1"}},
		{ThreadID: "t", CallID: "mwait1", At: past, Message: runtime.Message{V: 1, ID: "mwait-1", ThreadID: "t", Kind: runtime.KindRetry, Text: "1"}},
	} {
		if err := tm.Schedule(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		select {
		case <-q:
		case <-time.After(10 * time.Second):
			t.Fatal("a due timer did not fire")
		}
	}
	tm.Stop() // waits for the callbacks, which submit the deletes before they return
	d.Close()

	d = open(t, dir)
	tm = d.Timers(chanQueue(q))
	defer tm.Stop()
	n, err := tm.Rearm(ctx)
	if err != nil || n.Total() != 0 {
		t.Fatalf("Rearm after the timers fired: %+v, %v; want nothing", n, err)
	}
}

// A message delivered twice before a checkpoint and then consumed is gone:
// the redelivery does not leave a second copy that the checkpoint writes
// back as pending (the first put since a cut included).
func TestRedeliveredMessageConsumedBeforeACheckpointIsGone(t *testing.T) {
	ctx := context.Background()
	d := open(t, t.TempDir())
	in := d.Inbox()
	for range 2 {
		if err := in.Put(ctx, []runtime.Message{msg("a", "m1")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Done("a", []string{"m1"}); err != nil {
		t.Fatal(err)
	}
	pending, err := in.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 0 {
		t.Fatalf("after a redelivery and its consumption %d messages are pending, want none: %+v", len(pending), pending)
	}
}
