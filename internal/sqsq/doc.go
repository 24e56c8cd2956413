// Package sqsq binds the runtime's queues to Amazon SQS: the sender of the
// FIFO input queue (runtime.Queue), the sender of the standard output queue
// (runtime.Output), and the decoding of SQS records that Lambda receives
// into runtime messages.
//
// It owns the wire form of messages on SQS and nothing else. It must not
// receive or delete messages (Lambda's event source mapping does), decide
// what a message means (the engine does) or retry a slice.
//
// # Input queue (FIFO)
//
// A deployment has one FIFO input queue per priority class (interactive,
// background); Router (NewClassQueues) sends each message to its
// runtime.Message.Class's queue. The runtime's messages carry their
// thread's class; a message that carries none (a callback URL signed before
// every URL carried the class, `agentslice send` without --class) is routed
// by its thread's class when the Router has a ClassLookup (the history
// database; a class never changes, so it is cached). So a thread's messages
// share one queue and keep their order.
//
// Each message goes out with
//
//   - MessageGroupId = GroupID(thread ID): the thread ID itself when SQS
//     accepts it (1 to 128 characters, ASCII letters, digits and punctuation),
//     else a hash of it. One group per thread gives FIFO order within a
//     thread and parallelism across threads.
//   - MessageDeduplicationId = DedupID(thread ID, message ID): "thread:id"
//     when that is a valid SQS ID, else a hash of the pair. Message IDs are
//     unique per thread only (the dedup store keys on the pair), and a FIFO
//     queue deduplicates across the whole queue unless its DeduplicationScope
//     is messageGroup, so the bare message ID could drop another thread's
//     message sent within five minutes. The delay relay and the Scheduler
//     timers use the same function, so every path that delivers a message
//     gives it the same deduplication ID.
//   - MessageBody = the message's JSON (runtime.EncodeMessage), with the two
//     characters SQS refuses that JSON leaves raw (U+FFFE, U+FFFF) written as
//     \u escapes, so every valid message is a valid SQS body; characters
//     outside the Basic Multilingual Plane (emoji) are escaped as well,
//     because fauxqs, the local stand-in, refuses them (see EncodeBody).
//
// A message whose encoded body is larger than Config.MaxMessageBytes (the
// queue's MaximumMessageSize; SQS allows at most 1 MiB) is rejected with a
// *TooLargeError, never truncated.
//
// Send with several messages uses SendMessageBatch: at most 10 entries and
// 1 MiB (the sum of the bodies) per request, the current SQS limits. A batch
// holds at most one message per thread, and batches go out one after the
// other, so a partial failure can never let a later message of a thread
// overtake an earlier one. Entries that failed through no fault of the
// sender are sent again with jittered backoff, up to Config.Attempts times;
// entries SQS refused as the sender's fault are not. Send stops at the first
// batch that still has failures and returns a *BatchError: the messages it
// sent before are deduplicated by SQS if the caller sends them all again
// within five minutes, and by the dedup store and history after that.
//
// # Output queue (standard)
//
// Output.Publish sends an agent's reply, error or notice as the JSON of
// OutputRecord. Standard queues deliver at least once and unordered:
// consumers deduplicate by the event's ID.
//
// # Records
//
// DecodeRecord turns an events.SQSMessage of the input queue into a
// runtime.Message through runtime.DecodeMessage, and checks that the record's
// MessageGroupId is GroupID of the message's thread_id.
//
// # Errors
//
//   - *runtime.BadMessageError: a message that can never be sent or
//     processed: it fails runtime validation, or a record's body is malformed,
//     or its MessageGroupId does not match its thread_id. Not retryable; the
//     Lambda reports it as a batch item failure so it ends in the DLQ.
//   - *TooLargeError (wrapped in runtime.Permanent): the encoded message is
//     larger than the queue's maximum. Not retryable.
//   - *BatchError: some entries of a SendMessageBatch failed after retries.
//     Wrapped in runtime.Permanent when SQS blamed the sender for any of
//     them, else retryable.
//   - an SQS error that blames the message itself (InvalidMessageContents,
//     InvalidParameterValue, MissingParameter; see Refused), for example a
//     queue whose MaximumMessageSize is below the configured one: wrapped in
//     runtime.Permanent. Not retryable.
//   - anything else (network, throttling after the SDK's retries, a missing
//     queue, access denied) is wrapped with what was being done and is
//     retryable.
package sqsq
