//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
	"github.com/agentslice/agentslice/internal/timers"
)

// TestWakeupDLQ runs a long sleep's wake-up through the path of a failed
// schedule: the slice function creates the one-time schedule (kumo stores
// it; no emulator fires schedules) naming the wake-up DLQ as its dead-letter
// queue; the test plays EventBridge Scheduler giving up on the target and
// dead-lettering the schedule's input to that queue; the delay relay, fed
// by the wake-up DLQ's poller, delivers the wake-up to the input queue, and
// the thread wakes with the sleep's result exactly once.
//
// What this does not prove: the body Scheduler really dead-letters (here
// the target's input as the schedule holds it; see the README's first-
// deploy checklist, "force one Scheduler failure").
func TestWakeupDLQ(t *testing.T) {
	r := startRig(t, rigOptions{wakeupDLQ: true})
	ctx := context.Background()
	th := "long-sleep-" + time.Now().Format("150405")
	r.send(t, th, "m1", "please sleep long")
	// The slice that dispatched the sleep has created the schedule before
	// it logs.
	if sl := r.slices(t, th, 1); sl[0].Dispatched == "" {
		t.Fatalf("the first slice dispatched nothing: %+v", sl[0])
	}
	sched := scheduler.NewFromConfig(awstest.Config(), func(o *scheduler.Options) { o.BaseEndpoint = aws.String(r.stack.Kumo.URL) })
	_, thread := r.kinds(t, th)
	if len(thread.Items) < 2 || thread.Items[1].Kind != runtime.ItemToolCall {
		t.Fatalf("history %+v, want the sleep call second", thread.Items)
	}
	callID := thread.Items[1].CallID
	name := timers.ScheduleName(timers.DefaultNamePrefix, th, callID)
	got, err := sched.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: aws.String("default")})
	if err != nil {
		t.Fatalf("the schedule of %s's sleep: %v", th, err)
	}
	tg := got.Target
	if tg == nil || tg.DeadLetterConfig == nil || aws.ToString(tg.DeadLetterConfig.Arn) != r.wakeupARN {
		t.Fatalf("schedule %s: target %+v, want the dead-letter queue %s", name, tg, r.wakeupARN)
	}
	if r.wakeup.Batches() != 0 {
		t.Fatal("the wake-up DLQ delivered something before any schedule failed")
	}

	// Scheduler gives up on the target: the schedule's input goes to its
	// dead-letter queue.
	if _, err := r.stack.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(r.wakeupURL), MessageBody: tg.Input}); err != nil {
		t.Fatal(err)
	}
	if got := r.replies(t, th, 1); got[0] != "reply: Rested long." {
		t.Fatalf("replies %q", got)
	}
	kinds, thread := r.kinds(t, th)
	if want := []string{"user", "tool_call(sleep)", "tool_result", "assistant"}; !slices.Equal(kinds, want) {
		t.Fatalf("history %v, want %v", kinds, want)
	}
	if wake := thread.Items[2]; wake.Input != runtime.WakeID(th, callID) {
		t.Fatalf("the sleep's result came from %q, want the wake-up message %q", wake.Input, runtime.WakeID(th, callID))
	}
	if r.wakeup.Batches() == 0 {
		t.Fatal("the relay was never invoked from the wake-up DLQ")
	}
}
