package timers_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/timers"
)

// The timers under the failures at-least-once delivery brings (issue 36:
// the AWS timers were not crash-tested). A slice that armed a timer and
// crashed before its commit arms it again when its batch comes back; a
// relay that sent a wake-up and crashed before the delay queue deleted the
// record relays it again; a Cancel retried after a crash deletes nothing
// twice. Each must leave exactly one wake-up for the thread, or none after
// a cancel of a long sleep.
func TestTimersUnderRetriesAndCrashes(t *testing.T) {
	sc, _ := sqsClient(t)
	delay, input := createQueue(t, sc, false), createQueue(t, sc, true)
	sched, _ := schedulerServer(t)
	tm := newTimers(t, sc, sched, timers.Config{DelayQueueURL: delay, InputQueueURL: input, ScheduleGroup: "default"})
	ctx := context.Background()

	t.Run("long sleep armed twice is one schedule", func(t *testing.T) {
		tr := timer("crash-long", "c1", 3*time.Hour)
		for attempt := range 2 {
			if err := tm.Schedule(ctx, tr); err != nil {
				t.Fatalf("attempt %d: %v (a retried slice must arm the same timer again without error)", attempt+1, err)
			}
		}
		name := timers.ScheduleName(timers.DefaultNamePrefix, tr.ThreadID, tr.CallID)
		got, err := sched.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: aws.String("default")})
		if err != nil {
			t.Fatalf("the schedule is gone after the second Schedule: %v", err)
		}
		if want := timers.AtExpression(tr.At); aws.ToString(got.ScheduleExpression) != want {
			t.Errorf("schedule fires at %s, want %s (the first arming's time)", aws.ToString(got.ScheduleExpression), want)
		}
		list, err := sched.ListSchedules(ctx, &scheduler.ListSchedulesInput{GroupName: aws.String("default")})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range list.Schedules {
			if aws.ToString(s.Name) == name {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d schedules named %s, want 1", n, name)
		}
		// The thread is interrupted: its slice cancels, crashes, and its
		// retry cancels again. Neither fails, and the schedule is gone.
		for attempt := range 2 {
			if err := tm.Cancel(ctx, tr.ThreadID, tr.CallID); err != nil {
				t.Fatalf("cancel attempt %d: %v", attempt+1, err)
			}
		}
		if _, err := sched.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: aws.String("default")}); err == nil {
			t.Fatal("the schedule survived its cancel")
		}
	})

	t.Run("short sleep armed twice and relayed three times is one wake-up", func(t *testing.T) {
		tr := timer("crash-short", "c1", 0)
		for range 2 {
			if err := tm.Schedule(ctx, tr); err != nil {
				t.Fatal(err)
			}
		}
		recs := receive(t, sc, delay)
		if len(recs) != 2 {
			t.Fatalf("%d wake-ups on the delay queue, want the 2 armings (a delay message cannot be withdrawn)", len(recs))
		}
		q, err := sqsq.NewQueue(sc, sqsq.QueueConfig{URL: input})
		if err != nil {
			t.Fatal(err)
		}
		// The first record is relayed, the relay crashes before the delay
		// queue deletes it, and it is relayed again; then the second arming.
		for _, r := range []int{0, 0, 1} {
			if err := timers.Relay(ctx, q, recs[r]); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for range 3 {
			out := receive(t, sc, input)
			for _, r := range out {
				m, err := sqsq.DecodeRecord(r)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, m.ID)
				_, _ = sc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(input), ReceiptHandle: aws.String(r.ReceiptHandle)})
			}
		}
		if len(got) != 1 || got[0] != tr.Message.ID {
			t.Fatalf("the input queue delivered %v, want the one wake-up %s", got, tr.Message.ID)
		}
	})
}
