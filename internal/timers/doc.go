// Package timers is runtime.Timers on AWS: a sleeping thread's wake-up
// message is delivered to the FIFO input queue at the requested time, by an
// SQS delay queue for short sleeps and by EventBridge Scheduler for long ones.
//
// It owns how a wake-up travels and nothing else. It must not decide what a
// wake-up means (the engine does: a wake-up that arrives after the sleep was
// interrupted is recorded as late and ignored) and it keeps no state: every
// decision is made from the Timer and the clock.
//
// A wake-up goes to its thread's class's input queue: a schedule of a
// background thread targets Config.BackgroundQueueURL (when set), and the
// relay is given an sqsq.Router, which routes by the message's class.
//
// # Short sleeps: at most MaxQueueDelay (900 s)
//
// FIFO queues have no per-message delay, so the wake-up message goes to a
// standard queue (Config.DelayQueueURL) with per-message DelaySeconds, the
// delay rounded up to whole seconds. When it becomes visible, the delay-relay
// Lambda hands the record to Relay (or RelayEvent), which decodes the
// message and sends it to the FIFO input queue with the thread's
// MessageGroupId and the message's deduplication ID (sqsq.GroupID,
// sqsq.DedupID). A message on the delay queue cannot be withdrawn, so Cancel
// does nothing for it: the wake-up arrives late and the engine ignores it.
//
// # Long sleeps: more than MaxQueueDelay
//
// A one-time EventBridge Scheduler schedule fires the wake-up:
//
//   - name: ScheduleName(Config.NamePrefix, thread ID, call ID), unique and
//     deterministic per (thread, call), at most 64 characters of
//     [0-9a-zA-Z-_.], so scheduling the same call twice finds the first
//     schedule (ConflictException is not an error) and Cancel can find it;
//   - expression at(yyyy-mm-ddThh:mm:ss) in UTC, rounded up to the second;
//     FlexibleTimeWindow OFF; ActionAfterCompletion DELETE, so a fired
//     schedule removes itself;
//   - target: the universal target arn:aws:scheduler:::aws-sdk:sqs:sendMessage
//     with an Input holding QueueUrl, MessageBody, MessageGroupId and an
//     explicit MessageDeduplicationId. The templated SQS target
//     (SqsParameters) can set only MessageGroupId, so on a FIFO queue it
//     needs content-based deduplication; with the universal target the same
//     deduplication ID as every other path is sent whatever the queue's
//     setting. The role (Config.SchedulerRoleARN) needs sqs:SendMessage on
//     the input queue (and kms:GenerateDataKey/Decrypt if it is encrypted
//     with a customer key).
//
// Every schedule names Config.DeadLetterARN (a standard queue; Scheduler
// accepts no FIFO DLQ) in its DeadLetterConfig when it is set (the stack
// always sets it): a wake-up Scheduler could not deliver after its retries
// lands there with the target's Input as its body, and the delay relay,
// which reads that queue too, delivers it (DecodeWakeUp unwraps the Input,
// given as the body or inside a JSON wrapper: the dead-letter event's exact
// shape is not documented), so a failed wake-up is late rather than lost.
//
// Cancel deletes the schedule; a schedule that does not exist (it already
// fired and deleted itself, or the sleep went to the delay queue) is not an
// error. Cancel does not know which path a sleep took, so it always costs one
// DeleteSchedule request.
//
// No local emulator fires schedules: the tests assert the CreateSchedule
// request against an in-process Scheduler API (github.com/sivchari/kumo) and
// deliver the wake-up themselves by sending the Input to fauxqs.
//
// # Errors
//
//   - *runtime.BadMessageError: the timer's message fails validation or
//     belongs to another thread; a relayed record's body is malformed. Not
//     retryable (the relay reports the record as a batch item failure, and
//     the delay queue's redrive policy moves it to its DLQ).
//   - *sqsq.TooLargeError (wrapped in runtime.Permanent): the wake-up
//     message is larger than the delay queue accepts. Not retryable.
//   - an SQS refusal of the delayed message itself (sqsq.Refused), wrapped in
//     runtime.Permanent. Not retryable.
//   - anything else (network, throttling, access denied, a schedule group
//     that does not exist) is wrapped with what was being done and is
//     retryable.
package timers
