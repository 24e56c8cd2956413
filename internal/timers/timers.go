package timers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// MaxQueueDelay is the longest delay SQS can give one message. Sleeps up to
// it go to the delay queue, longer ones to EventBridge Scheduler.
const MaxQueueDelay = 900 * time.Second

// UniversalSQSTarget is the EventBridge Scheduler universal target that
// calls SQS SendMessage with the schedule's Input as its parameters, in the
// aws partition; UniversalSQSTargetIn gives it for any partition.
const UniversalSQSTarget = "arn:aws:scheduler:::aws-sdk:sqs:sendMessage"

// UniversalSQSTargetIn is UniversalSQSTarget in partition ("aws",
// "aws-cn", "aws-us-gov").
func UniversalSQSTargetIn(partition string) string {
	return "arn:" + partition + ":scheduler:::aws-sdk:sqs:sendMessage"
}

// partitionOf returns the partition of an ARN, "" when arn is not one.
func partitionOf(arn string) string {
	parts := strings.SplitN(arn, ":", 3)
	if len(parts) < 3 || parts[0] != "arn" || parts[1] == "" {
		return ""
	}
	return parts[1]
}

// Defaults for Config.
const (
	DefaultScheduleGroup = "default"
	DefaultNamePrefix    = "as-"
)

var scheduleNameChars = regexp.MustCompile(`^[0-9a-zA-Z_.-]*$`)

// SQSAPI is the part of *sqs.Client the delay path uses.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SchedulerAPI is the part of *scheduler.Client the schedule path uses.
type SchedulerAPI interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

// Config configures Timers. The URLs and ARNs come from the CDK stack.
type Config struct {
	// DelayQueueURL is the standard queue for delays up to MaxQueueDelay.
	// Required.
	DelayQueueURL string
	// InputQueueURL is the FIFO input queue that schedules send to.
	// Required.
	InputQueueURL string
	// BackgroundQueueURL is the FIFO input queue of background threads;
	// schedules of wake-ups whose message has class background send there
	// (a thread's messages all go through its class's queue). Empty: every
	// schedule sends to InputQueueURL.
	BackgroundQueueURL string
	// SchedulerRoleARN is the role EventBridge Scheduler assumes to send to
	// the input queue. Required.
	SchedulerRoleARN string
	// ScheduleGroup is the schedule group holding the schedules. Default
	// DefaultScheduleGroup.
	ScheduleGroup string
	// NamePrefix starts every schedule name, so that a deployment's
	// schedules can be told apart. At most 30 characters of [0-9a-zA-Z-_.].
	// Default DefaultNamePrefix.
	NamePrefix string
	// DeadLetterARN is an optional SQS queue for wake-ups Scheduler could
	// not deliver after its retries.
	DeadLetterARN string
	// MaxMessageBytes is the delay queue's MaximumMessageSize. Default and
	// upper bound: sqsq.SQSMaxMessageBytes.
	MaxMessageBytes int
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// Timers is the AWS runtime.Timers. It is safe for concurrent use.
type Timers struct {
	sqs    SQSAPI
	sched  SchedulerAPI
	cfg    Config
	target string // the universal SQS target in the role's partition
}

var _ runtime.Timers = (*Timers)(nil)

// New returns Timers using already built clients.
func New(sqsClient SQSAPI, sched SchedulerAPI, cfg Config) (*Timers, error) {
	switch {
	case sqsClient == nil || sched == nil:
		return nil, errors.New("timers: nil SQS or Scheduler client")
	case cfg.DelayQueueURL == "":
		return nil, errors.New("timers: Config.DelayQueueURL is empty")
	case cfg.InputQueueURL == "":
		return nil, errors.New("timers: Config.InputQueueURL is empty")
	case cfg.SchedulerRoleARN == "":
		return nil, errors.New("timers: Config.SchedulerRoleARN is empty")
	}
	if cfg.ScheduleGroup == "" {
		cfg.ScheduleGroup = DefaultScheduleGroup
	}
	if cfg.NamePrefix == "" {
		cfg.NamePrefix = DefaultNamePrefix
	}
	if len(cfg.NamePrefix) > 30 || !scheduleNameChars.MatchString(cfg.NamePrefix) {
		return nil, fmt.Errorf("timers: Config.NamePrefix %q must be at most 30 characters of [0-9a-zA-Z-_.]", cfg.NamePrefix)
	}
	switch n := cfg.MaxMessageBytes; {
	case n == 0:
		cfg.MaxMessageBytes = sqsq.SQSMaxMessageBytes
	case n < 1024 || n > sqsq.SQSMaxMessageBytes:
		return nil, fmt.Errorf("timers: Config.MaxMessageBytes is %d; SQS queues accept 1024 to %d", n, sqsq.SQSMaxMessageBytes)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	partition := partitionOf(cfg.SchedulerRoleARN)
	if partition == "" {
		return nil, fmt.Errorf("timers: Config.SchedulerRoleARN %q is not an ARN", cfg.SchedulerRoleARN)
	}
	return &Timers{sqs: sqsClient, sched: sched, cfg: cfg, target: UniversalSQSTargetIn(partition)}, nil
}

// ScheduleName returns the schedule name of (threadID, callID): prefix
// followed by 26 characters of a hash of the pair.
func ScheduleName(prefix, threadID, callID string) string {
	return runtime.DeriveID(prefix, threadID, callID)
}

// Schedule arranges for t.Message to reach the input queue at t.At: through
// the delay queue when t.At is at most MaxQueueDelay away (or past), else
// through a one-time schedule.
func (t *Timers) Schedule(ctx context.Context, tm runtime.Timer) error {
	if tm.ThreadID == "" || tm.CallID == "" {
		return runtime.Permanent(fmt.Errorf("timers: timer without a thread ID (%q) or call ID (%q)", tm.ThreadID, tm.CallID))
	}
	m := tm.Message
	if m.ThreadID != tm.ThreadID {
		return fmt.Errorf("timers: scheduling call %s of thread %s: %w", tm.CallID, tm.ThreadID, &runtime.BadMessageError{
			ID: m.ID, Field: "thread_id", Reason: fmt.Sprintf("wake-up for thread %q scheduled by thread %q", m.ThreadID, tm.ThreadID)})
	}
	body, err := sqsq.EncodeBody(m)
	if err != nil {
		return fmt.Errorf("timers: scheduling call %s of thread %s: %w", tm.CallID, tm.ThreadID, err)
	}
	delay := tm.At.Sub(t.cfg.Now())
	if delay <= MaxQueueDelay {
		return t.delay(ctx, tm, body, delay)
	}
	return t.schedule(ctx, tm, body)
}

func (t *Timers) delay(ctx context.Context, tm runtime.Timer, body string, d time.Duration) error {
	if len(body) > t.cfg.MaxMessageBytes {
		return runtime.Permanent(&sqsq.TooLargeError{ID: tm.Message.ID, Size: len(body), Limit: t.cfg.MaxMessageBytes, Queue: t.cfg.DelayQueueURL})
	}
	secs := int32(0)
	if d > 0 {
		secs = int32((d + time.Second - 1) / time.Second) // round up: never wake early
	}
	_, err := t.sqs.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(t.cfg.DelayQueueURL),
		MessageBody:  aws.String(body),
		DelaySeconds: secs,
	})
	if err != nil {
		err = fmt.Errorf("timers: sending the wake-up of call %s of thread %s to the delay queue (%d s): %w", tm.CallID, tm.ThreadID, secs, err)
		if sqsq.Refused(err) {
			return runtime.Permanent(err)
		}
		return err
	}
	return nil
}

// targetInput is the Input of the universal SQS SendMessage target: the
// SendMessage request parameters.
type targetInput struct {
	QueueUrl               string
	MessageBody            string
	MessageGroupId         string
	MessageDeduplicationId string
}

// AtExpression returns the schedule expression firing once at t (UTC),
// rounded up to the next whole second.
func AtExpression(t time.Time) string {
	t = t.UTC()
	if r := t.Truncate(time.Second); !r.Equal(t) {
		t = r.Add(time.Second)
	}
	return "at(" + t.Format("2006-01-02T15:04:05") + ")"
}

func (t *Timers) schedule(ctx context.Context, tm runtime.Timer, body string) error {
	m := tm.Message
	queue := t.cfg.InputQueueURL
	if m.Class.OrDefault() == runtime.ClassBackground && t.cfg.BackgroundQueueURL != "" {
		queue = t.cfg.BackgroundQueueURL
	}
	input, err := json.Marshal(targetInput{
		QueueUrl:               queue,
		MessageBody:            body,
		MessageGroupId:         sqsq.GroupID(m.ThreadID),
		MessageDeduplicationId: sqsq.DedupID(m.ThreadID, m.ID),
	})
	if err != nil {
		return fmt.Errorf("timers: encoding the schedule input of call %s of thread %s: %w", tm.CallID, tm.ThreadID, err)
	}
	name := ScheduleName(t.cfg.NamePrefix, tm.ThreadID, tm.CallID)
	target := &schedtypes.Target{
		Arn:     aws.String(t.target),
		RoleArn: aws.String(t.cfg.SchedulerRoleARN),
		Input:   aws.String(string(input)),
	}
	if t.cfg.DeadLetterARN != "" {
		target.DeadLetterConfig = &schedtypes.DeadLetterConfig{Arn: aws.String(t.cfg.DeadLetterARN)}
	}
	req := &scheduler.CreateScheduleInput{
		Name:                       aws.String(name),
		GroupName:                  aws.String(t.cfg.ScheduleGroup),
		ScheduleExpression:         aws.String(AtExpression(tm.At)),
		ScheduleExpressionTimezone: aws.String("UTC"),
		FlexibleTimeWindow:         &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeOff},
		ActionAfterCompletion:      schedtypes.ActionAfterCompletionDelete,
		Target:                     target,
	}
	if d := fmt.Sprintf("agentslice wake-up of thread %s, call %s", tm.ThreadID, tm.CallID); len(d) <= 512 {
		req.Description = aws.String(d)
	}
	_, err = t.sched.CreateSchedule(ctx, req)
	var conflict *schedtypes.ConflictException
	if errors.As(err, &conflict) {
		return nil // scheduled before: the same call gets the same wake-up
	}
	if err != nil {
		return fmt.Errorf("timers: creating schedule %s for call %s of thread %s at %s: %w",
			name, tm.CallID, tm.ThreadID, tm.At.UTC().Format(time.RFC3339), err)
	}
	return nil
}

// Cancel deletes the schedule of (threadID, callID), if there is one. A
// wake-up already on the delay queue cannot be cancelled; the engine ignores
// it when it arrives.
func (t *Timers) Cancel(ctx context.Context, threadID, callID string) error {
	name := ScheduleName(t.cfg.NamePrefix, threadID, callID)
	_, err := t.sched.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{
		Name:      aws.String(name),
		GroupName: aws.String(t.cfg.ScheduleGroup),
	})
	var missing *schedtypes.ResourceNotFoundException
	if err != nil && !errors.As(err, &missing) {
		return fmt.Errorf("timers: deleting schedule %s of call %s of thread %s: %w", name, callID, threadID, err)
	}
	return nil
}
