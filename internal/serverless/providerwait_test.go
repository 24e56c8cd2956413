package serverless_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless"
)

// TestProviderOutageWaitsThroughTheDelayQueue: on AWS a model provider that
// keeps failing (the scripted model's "always fail" step: a broken stream
// on every attempt) costs no held function and no dead letter. Each slice
// spends its in-slice attempts, commits the user's message with the wait
// and schedules a retry through the function's timers (the SQS delay queue
// and the relay, real here on fauxqs); after the configured whole wait the
// completion fails for good into history (a failure item and an error
// event), and the message is consumed, never dead-lettered. Without the
// provider wait wired into the slice function the message goes to the DLQ
// after maxReceiveCount instead.
func TestProviderOutageWaitsThroughTheDelayQueue(t *testing.T) {
	t.Setenv(lambdafn.EnvProviderWait, "1s")
	t.Setenv(lambdafn.EnvProviderWaitMax, "2s")
	t.Setenv(lambdafn.EnvProviderMaxWait, "3s")
	p := startInProcess(t)
	thread := "outage-" + time.Now().Format("150405.000")
	p.send(t, thread, "m1", "always fail")

	got := p.replies(t, thread, 1)
	if !strings.HasPrefix(got[0], "error: the model failed after waiting") {
		t.Fatalf("the outage ended with %q, want the failure after the wait", got[0])
	}
	// Every slice acknowledged its message (no retry outcome, no DLQ): the
	// first one and at least one woken by a retry message the delay queue
	// and the relay brought back.
	sl, err := p.logs.WaitSlices(thread, 2, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// (The slice that gives up after the whole wait is logged as
	// model_error: it committed the failure and acknowledged its message.)
	for i, s := range sl {
		if s.Outcome != serverless.OutcomeOK && s.Outcome != serverless.OutcomeModelError {
			t.Fatalf("slice %d of the outage: %+v, want ok or model_error (a wait or the failure is committed, never a failed slice)", i, s)
		}
	}
	if sl[0].Outcome != serverless.OutcomeOK {
		t.Fatalf("the first slice of the outage: %+v, want ok (it commits the wait)", sl[0])
	}
	for _, m := range p.dlq.All() {
		if m.GroupID == thread {
			t.Fatalf("the message was dead-lettered: %s", m.Body)
		}
	}
	th, err := p.fn.Engine.History.Load(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	var failures, users int
	for i := range th.Items {
		it := &th.Items[i]
		switch {
		case runtime.IsFailure(it):
			failures++
		case it.Kind == runtime.ItemUser:
			users++
		}
	}
	if failures != 1 || users != 1 || th.State.ModelWait != nil {
		t.Fatalf("history has %d failure item(s) and %d user item(s), wait %+v; want one of each and no wait left", failures, users, th.State.ModelWait)
	}

}
