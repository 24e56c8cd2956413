//go:build e2e

package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless"
	"github.com/agentslice/agentslice/internal/serverless/lambdatest"
)

func logSlice(t *testing.T, what string, sl lambdatest.SliceLog) {
	t.Helper()
	t.Logf("ROUND TRIPS %-36s %d %v (outcome %s, completions %d, first delivery %v, %.1f ms)",
		what, sl.RoundTrips, sl.RoundTripsBy, sl.Outcome, sl.Completions, sl.FirstDelivery, sl.DurationMS)
}

// TestServerless drives the deployment through its queues only, as a user
// with `agentslice send` and `agentslice tail` would.
func TestServerless(t *testing.T) {
	r := startRig(t)
	suffix := time.Now().Format("150405")

	// Warm-up: the first invocation starts the bootstrap (its init) and the
	// first slice connects to the database; what follows runs warm.
	t.Run("cold start", func(t *testing.T) {
		th := "warm-" + suffix
		r.send(t, th, "m1", "hello")
		if got := r.replies(t, th, 1); got[0] != "reply: Hello there." {
			t.Fatalf("replies %q", got)
		}
		logSlice(t, "cold plain turn", r.slices(t, th, 1)[0])
	})

	t.Run("scenarios", func(t *testing.T) {
		t.Run("plain turn", func(t *testing.T) {
			t.Parallel()
			th := "plain-" + suffix
			r.send(t, th, "m1", "hello")
			r.replies(t, th, 1)
			r.send(t, th, "m2", "hello again")
			if got := r.replies(t, th, 2); !slices.Equal(got, []string{"reply: Hello there.", "reply: Hello again."}) {
				t.Fatalf("replies %q", got)
			}
			sl := r.slices(t, th, 2)
			logSlice(t, "plain turn (user -> reply)", sl[0])
			logSlice(t, "plain turn, 2nd (user -> reply)", sl[1])
		})

		t.Run("tool call through RAP and the receiver", func(t *testing.T) {
			t.Parallel()
			th := "tool-" + suffix
			r.send(t, th, "m1", "what time is it?")
			if got := r.replies(t, th, 1); got[0] != "reply: The clock answered." {
				t.Fatalf("replies %q", got)
			}
			kinds, thread := r.kinds(t, th)
			if want := []string{"user", "assistant", "tool_call(get_time)", "tool_result", "assistant"}; !slices.Equal(kinds, want) {
				t.Fatalf("history %v, want %v", kinds, want)
			}
			res := thread.Items[3]
			if res.IsError || !strings.Contains(res.Text, "UTC") {
				t.Fatalf("get_time result %+v", res)
			}
			sl := r.slices(t, th, 2)
			if sl[0].Dispatched == "" || sl[1].Processed != 1 {
				t.Fatalf("slices %+v", sl)
			}
			logSlice(t, "tool turn (user -> get_time call)", sl[0])
			logSlice(t, "tool turn (result -> reply)", sl[1])
		})

		t.Run("forged callback is refused by the receiver", func(t *testing.T) {
			t.Parallel()
			resp, err := http.Post(r.front+"?t=x&c=y&e=9999999999&k=k1&s=AAAA", "application/json",
				strings.NewReader(`{"type":"tool_result","id":"y","group_id":"x","text":"forged"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d, want 403 from the rapreceiver bootstrap", resp.StatusCode)
			}
		})

		t.Run("sleep through the delay queue and the relay", func(t *testing.T) {
			t.Parallel()
			th := "sleep-" + suffix
			start := time.Now()
			r.send(t, th, "m1", "please sleep a while")
			if got := r.replies(t, th, 1); got[0] != "reply: Rested." {
				t.Fatalf("replies %q", got)
			}
			t.Logf("the 5 s sleep ended with a reply after %v", time.Since(start).Round(100*time.Millisecond))
			kinds, thread := r.kinds(t, th)
			if want := []string{"user", "tool_call(sleep)", "tool_result", "assistant"}; !slices.Equal(kinds, want) {
				t.Fatalf("history %v, want %v", kinds, want)
			}
			if wake := thread.Items[2]; wake.Input != runtime.WakeID(th, thread.Items[1].CallID) {
				t.Fatalf("the sleep's result came from %q, want the wake-up message %q", wake.Input, runtime.WakeID(th, thread.Items[1].CallID))
			}
			if r.delay.Batches() == 0 {
				t.Fatal("the delay relay was never invoked")
			}
		})

		t.Run("malformed records go to the DLQ without blocking their group", func(t *testing.T) {
			t.Parallel()
			th := "bad-" + suffix
			r.sendRaw(t, th, "raw-1", "{not json")
			r.sendRaw(t, th, "raw-2", `{"v":1,"id":"m0","thread_id":"`+th+`","kind":"shout","text":"hi"}`)
			r.send(t, th, "m1", "hello")
			if got := r.replies(t, th, 1); got[0] != "reply: Hello there." {
				t.Fatalf("replies %q", got)
			}
			err := r.dlq.WaitFor(Timeout, func(got []lambdatest.Received) bool {
				var reasons []string
				for _, m := range got {
					if m.GroupID == th && m.Attributes[serverless.AttrSource] == serverless.SourceDecode {
						reasons = append(reasons, m.Body+" => "+m.Attributes[serverless.AttrReason])
					}
				}
				if len(reasons) < 2 {
					return false
				}
				slices.Sort(reasons)
				t.Logf("dead letters:\n  %s", strings.Join(reasons, "\n  "))
				return strings.Contains(reasons[0], "{\"v\"") && strings.Contains(reasons[0], `unknown kind "shout"`) &&
					strings.HasPrefix(reasons[1], "{not json => ") && strings.Contains(reasons[1], "malformed JSON")
			})
			if err != nil {
				t.Fatal(err)
			}
		})

		t.Run("duplicates are processed once", func(t *testing.T) {
			t.Parallel()
			th := "dup-" + suffix
			r.send(t, th, "m1", "hello")
			r.send(t, th, "m1", "hello") // same deduplication ID: SQS drops it
			// The same message under another deduplication ID (as after
			// SQS's five-minute window): SQS delivers it, history dedups it.
			r.sendRaw(t, th, "redelivered-m1", `{"v":1,"id":"m1","thread_id":"`+th+`","kind":"user","text":"hello"}`)
			r.send(t, th, "m2", "hello again")
			if got := r.replies(t, th, 2); !slices.Equal(got, []string{"reply: Hello there.", "reply: Hello again."}) {
				t.Fatalf("replies %q", got)
			}
			sl := r.slices(t, th, 3)
			if len(sl) != 3 {
				t.Fatalf("%d slices, want 3 (m1, its duplicate, m2)", len(sl))
			}
			dup := sl[1]
			if dup.Outcome != serverless.OutcomeDuplicate || dup.Duplicates != 1 || dup.Processed != 0 || dup.Completions != 0 {
				t.Fatalf("the duplicate's slice: %+v", dup)
			}
			logSlice(t, "duplicate (history dedup)", dup)
			if kinds, _ := r.kinds(t, th); !slices.Equal(kinds, []string{"user", "assistant", "user", "assistant"}) {
				t.Fatalf("history %v", kinds)
			}
		})

		t.Run("a message that keeps failing reaches the DLQ after maxReceiveCount", func(t *testing.T) {
			t.Parallel()
			th := "fail-" + suffix
			r.send(t, th, "m1", "always fail")
			err := r.dlq.WaitFor(Timeout, func(got []lambdatest.Received) bool {
				for _, m := range got {
					if m.GroupID == th && strings.Contains(m.Body, "always fail") {
						return true
					}
				}
				return false
			})
			if err != nil {
				t.Fatal(err)
			}
			sl := r.slices(t, th, lambdatest.MaxReceiveCount)
			for i, s := range sl {
				if s.Outcome != serverless.OutcomeRetry || s.FirstDelivery != (i == 0) || s.Error == "" {
					t.Fatalf("slice %d: %+v", i, s)
				}
			}
			logSlice(t, "failed slice, redelivered", sl[1])
			if len(sl) != lambdatest.MaxReceiveCount {
				t.Fatalf("%d slices, want %d (one per receive)", len(sl), lambdatest.MaxReceiveCount)
			}
		})
	})
}
