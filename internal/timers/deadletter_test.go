package timers_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/timers"
)

// A wake-up EventBridge Scheduler could not deliver after its retries is
// not lost: the schedule names a dead-letter queue, Scheduler puts the
// target's Input there (the dead-letter event; no emulator does this, so
// the test sends exactly that body, with the attributes Scheduler adds, to
// a real standard queue on fauxqs), and the delay relay, which reads that
// queue, delivers the wake-up into the thread's group of the FIFO input
// queue. If the schedule did fire once after all, the input queue's
// deduplication keeps one copy.
func TestDeadLetteredScheduleIsRelayed(t *testing.T) {
	sc, _ := sqsClient(t)
	input, dlq := createQueue(t, sc, true), createQueue(t, sc, false)
	const dlqARN = "arn:aws:sqs:us-east-1:123456789012:agentslice-wakeup-dlq"
	sched, rec := schedulerServer(t)
	tm := newTimers(t, sc, sched, timers.Config{InputQueueURL: input, DeadLetterARN: dlqARN})
	ctx := context.Background()
	tr := timer("sleepy", "call_long", 5*time.Hour)
	if err := tm.Schedule(ctx, tr); err != nil {
		t.Fatal(err)
	}
	got := rec.take()
	var req struct {
		Target struct {
			Input            string
			DeadLetterConfig struct{ Arn string }
		}
	}
	if len(got) != 1 || json.Unmarshal(got[0].Body, &req) != nil {
		t.Fatalf("requests %+v", got)
	}
	if req.Target.DeadLetterConfig.Arn != dlqARN {
		t.Fatalf("CreateSchedule without the dead-letter queue: %s", got[0].Body)
	}

	// Scheduler's dead-letter event: the Input as the body.
	str := func(s string) sqstypes.MessageAttributeValue {
		return sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(s)}
	}
	if _, err := sc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(dlq), MessageBody: aws.String(req.Target.Input),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"ERROR_CODE":                str("AWS.SimpleQueueService.NonExistentQueue"),
			"ERROR_MESSAGE":             str("The specified queue does not exist."),
			"EXHAUSTED_RETRY_CONDITION": str("MaximumRetryAttempts"),
			"RETRY_ATTEMPTS":            str("185"),
			"SCHEDULE_ARN":              str("arn:aws:scheduler:us-east-1:123456789012:schedule/default/x"),
			"TARGET_ARN":                str(timers.UniversalSQSTarget),
		}}); err != nil {
		t.Fatal(err)
	}
	recs := receive(t, sc, dlq)
	if len(recs) != 1 {
		t.Fatalf("%d dead-letter events, want 1", len(recs))
	}
	q, err := sqsq.NewQueue(sc, sqsq.QueueConfig{URL: input})
	if err != nil {
		t.Fatal(err)
	}
	var logged []error
	resp := timers.RelayEvent(ctx, q, events.SQSEvent{Records: recs}, func(err error) { logged = append(logged, err) })
	if len(resp.BatchItemFailures) != 0 || len(logged) != 0 {
		t.Fatalf("relay failed: %+v %v", resp.BatchItemFailures, logged)
	}
	// The schedule fired after all (late): same dedup ID, one message.
	var send sqs.SendMessageInput
	if err := json.Unmarshal([]byte(req.Target.Input), &send); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.SendMessage(ctx, &send); err != nil {
		t.Fatal(err)
	}
	out := receive(t, sc, input)
	if len(out) != 1 {
		t.Fatalf("%d wake-ups in the input queue, want 1", len(out))
	}
	m, err := sqsq.DecodeRecord(out[0])
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != tr.Message.ID || m.Kind != runtime.KindWake || m.ToolCallID != "call_long" ||
		out[0].Attributes["MessageGroupId"] != sqsq.GroupID("sleepy") ||
		out[0].Attributes["MessageDeduplicationId"] != sqsq.DedupID("sleepy", m.ID) {
		t.Fatalf("delivered %+v with attributes %v", m, out[0].Attributes)
	}
}

func TestDecodeWakeUp(t *testing.T) {
	w := wake("t1", "c1")
	body, err := sqsq.EncodeBody(w)
	if err != nil {
		t.Fatal(err)
	}
	wrapped, _ := json.Marshal(map[string]string{"QueueUrl": "https://sqs.example/q.fifo", "MessageBody": body,
		"MessageGroupId": "t1", "MessageDeduplicationId": "d"})
	// The dead-letter event's shape is not documented: the target input as
	// the body, or a wrapper holding it as a string or an object, at any
	// field, up to three levels down.
	var input map[string]string
	_ = json.Unmarshal(wrapped, &input)
	inString, _ := json.Marshal(map[string]any{"ScheduleArn": "arn:aws:scheduler:us-east-1:1:schedule/default/x", "Input": string(wrapped)})
	inObject, _ := json.Marshal(map[string]any{"version": "1.0", "detail": map[string]any{"target": map[string]any{"input": input}}})
	for name, b := range map[string]string{"delay queue": body, "scheduler dead letter": string(wrapped),
		"wrapper, input as a string": string(inString), "wrapper, input as a nested object": string(inObject)} {
		m, err := timers.DecodeWakeUp(b)
		if err != nil || m.ID != w.ID || m.ThreadID != "t1" {
			t.Errorf("%s: %+v, %v", name, m, err)
		}
	}
	// A Scheduler envelope around garbage is still a bad message, and so
	// is a wrapper without a target input, or one too deep to look into.
	bad, _ := json.Marshal(map[string]string{"QueueUrl": "https://sqs.example/q.fifo", "MessageBody": `{"v":1`})
	noInput, _ := json.Marshal(map[string]any{"Input": `{"QueueUrl": "https://sqs.example/q.fifo"}`, "n": 3})
	deep, _ := json.Marshal(map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": input}}}})
	for name, b := range map[string]string{"wrapped garbage": string(bad), "wrapper without input": string(noInput), "too deep": string(deep)} {
		var bme *runtime.BadMessageError
		if _, err := timers.DecodeWakeUp(b); err == nil || !errors.As(err, &bme) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The universal target is in the partition of the scheduler role (the
// stack also deploys to aws-cn): no literal arn:aws: in a China region.
func TestScheduleTargetFollowsThePartition(t *testing.T) {
	sched, rec := schedulerServer(t)
	tm, err := timers.New(noSQS{t}, sched, timers.Config{
		DelayQueueURL:    "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/agentslice-delay",
		InputQueueURL:    "https://sqs.cn-north-1.amazonaws.com.cn/123456789012/agentslice-input.fifo",
		SchedulerRoleARN: "arn:aws-cn:iam::123456789012:role/agentslice-scheduler", Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.Schedule(context.Background(), timer("cn", "c", 2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	var req struct{ Target struct{ Arn string } }
	got := rec.take()
	if len(got) != 1 || json.Unmarshal(got[0].Body, &req) != nil || req.Target.Arn != "arn:aws-cn:scheduler:::aws-sdk:sqs:sendMessage" {
		t.Fatalf("target %q in %+v", req.Target.Arn, got)
	}
	if timers.UniversalSQSTargetIn("aws") != timers.UniversalSQSTarget {
		t.Fatal("aws partition target differs from UniversalSQSTarget")
	}
}
