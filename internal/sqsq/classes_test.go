package sqsq_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// Each message goes to its class's queue (empty = interactive), and the
// order within a thread holds in that queue.
func TestRouterSendsByClass(t *testing.T) {
	c, _, inURL := newQueue(t, true, nil)
	_, _, bgURL := newQueue(t, true, nil)
	r, err := sqsq.NewClassQueues(c, sqsq.QueueConfig{URL: inURL}, bgURL)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []runtime.Message
	for i, th := range []string{"u", "b", "u", "b", "x"} {
		m := user(th, th+string(rune('0'+i)), "hello")
		switch th {
		case "u":
			m.Class = runtime.ClassInteractive
		case "b":
			m.Class = runtime.ClassBackground
		}
		msgs = append(msgs, m)
	}
	if err := r.Send(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	ids := func(url string) []string { return drainIDs(t, c, url) }
	got := map[string][]string{"interactive": ids(inURL), "background": ids(bgURL)}
	want := map[string][]string{"interactive": {"u0", "u2", "x4"}, "background": {"b1", "b3"}}
	for k := range want {
		if len(got[k]) != len(want[k]) {
			t.Fatalf("%s queue got %v, want %v", k, got[k], want[k])
		}
		// Order holds within a thread; threads may interleave.
		byThread := func(ids []string) map[byte][]string {
			m := map[byte][]string{}
			for _, id := range ids {
				m[id[0]] = append(m[id[0]], id)
			}
			return m
		}
		g, w := byThread(got[k]), byThread(want[k])
		for th := range w {
			if len(g[th]) != len(w[th]) || (len(w[th]) == 2 && g[th][0] != w[th][0]) {
				t.Fatalf("%s queue got %v, want %v (thread order included)", k, got[k], want[k])
			}
		}
	}
	// Without a background queue everything goes to the one input queue.
	one, err := sqsq.NewClassQueues(c, sqsq.QueueConfig{URL: inURL}, "")
	if err != nil {
		t.Fatal(err)
	}
	if q := one.QueueFor(runtime.ClassBackground); q != one.QueueFor(runtime.ClassInteractive) {
		t.Fatal("a single-queue router sends background elsewhere")
	}
	if err := r.Send(context.Background(), runtime.Message{V: 1, ID: "z", ThreadID: "z", Kind: runtime.KindUser, Text: "x", Class: "urgent"}); err == nil {
		t.Fatal("a message with an unknown class was sent")
	}
}

// classTable is a ClassLookup over a map: the classes of the threads that
// exist, counting the lookups, failing for the thread named fail.
type classTable struct {
	classes map[string]runtime.Class
	fail    string
	lookups map[string]int
}

func (c *classTable) ThreadClass(_ context.Context, id string) (runtime.Class, bool, error) {
	c.lookups[id]++
	if id == c.fail {
		return "", false, errors.New("database unreachable")
	}
	cl, ok := c.classes[id]
	return cl, ok, nil
}

// A message without a class goes to its thread's queue, looked up once per
// thread and cached; a thread not yet created is interactive and looked
// up again next time; a failed lookup sends nothing and says why; a
// message that names its class is never looked up.
func TestRouterLooksUpTheClassOfUnclassedMessages(t *testing.T) {
	c, _, inURL := newQueue(t, true, nil)
	_, _, bgURL := newQueue(t, true, nil)
	r, err := sqsq.NewClassQueues(c, sqsq.QueueConfig{URL: inURL}, bgURL)
	if err != nil {
		t.Fatal(err)
	}
	table := &classTable{classes: map[string]runtime.Class{"b": runtime.ClassBackground, "u": runtime.ClassInteractive},
		fail: "f", lookups: map[string]int{}}
	r.WithClassLookup(table, 0)
	ctx := context.Background()
	for i, th := range []string{"b", "u", "b", "n", "n"} {
		if err := r.Send(ctx, user(th, fmt.Sprintf("%s%d", th, i), "hello")); err != nil {
			t.Fatal(err)
		}
	}
	named := user("b", "b9", "hello")
	named.Class = runtime.ClassBackground
	if err := r.Send(ctx, named); err != nil {
		t.Fatal(err)
	}
	if err := r.Send(ctx, user("u", "u8", "first"), user("f", "f0", "hello")); err == nil || !strings.Contains(err.Error(), "database unreachable") {
		t.Fatalf("a failed lookup: %v, want the lookup's error", err)
	}
	if want := map[string]int{"b": 1, "u": 1, "n": 2, "f": 1}; !maps.Equal(table.lookups, want) {
		t.Errorf("lookups %v, want %v (existing threads cached, new ones not, named classes never looked up)", table.lookups, want)
	}
	drain := func(url string) []string {
		out := drainIDs(t, c, url)
		slices.Sort(out)
		return out
	}
	if got, want := drain(bgURL), []string{"b0", "b2", "b9"}; !slices.Equal(got, want) {
		t.Errorf("background queue got %v, want %v", got, want)
	}
	// u8 was not sent either: the failed lookup came before anything went.
	if got, want := drain(inURL), []string{"n3", "n4", "u1"}; !slices.Equal(got, want) {
		t.Errorf("interactive queue got %v, want %v", got, want)
	}
}

// drainIDs receives and deletes every message of a queue and returns their
// IDs in the order received. A FIFO queue hands out a thread's next message
// only after the previous one is deleted: receive and delete until it is
// empty.
func drainIDs(t *testing.T, c *sqs.Client, url string) []string {
	t.Helper()
	var out []string
	for range 10 {
		recs := receive(t, c, url, 10)
		if len(recs) == 0 {
			break
		}
		for i, m := range decode(t, recs) {
			out = append(out, m.ID)
			del(t, c, url, recs[i])
		}
	}
	return out
}
