// Package serverless is the slice Lambda's wiring (cmd/slicefn): it reads
// the slice function's configuration from the environment
// (LoadSliceConfig; the contract and its errors are in internal/lambdafn),
// builds the AWS clients, the DSQL pool, the stores, the queues, the timers,
// the RAP loader and the engine once per execution environment
// (BuildSliceFunction), and handles each SQS FIFO batch of the input queue
// (Handler): one engine slice per message group, partial batch failures with
// FIFO semantics, never-succeeding records moved to the dead-letter queue
// at once, a JSON log line, EMF metrics and a count of storage and queue
// round trips per slice.
//
// It must not hold agent logic (the engine does), SQL (internal/dsql) or
// wire formats (internal/sqsq, internal/rap), and it keeps no mutable
// package state: everything lives in the SliceFunction that
// BuildSliceFunction returns. The callback receiver and the delay relay
// live in internal/lambdafn, so their bootstraps do not link all this.
//
// # Batches (SliceFunction.Handle)
//
// Records are grouped by MessageGroupId (one group per thread; sqsq.GroupID)
// in the order SQS delivered them. Groups run concurrently; within a group:
//
//  1. Every record is decoded (sqsq.DecodeRecord). A record that fails can
//     never succeed: it is sent to the dead-letter queue at once with the
//     reason as the message attribute "agentslice.reason" and acknowledged,
//     so it does not block the messages behind it. SQS counts attributes
//     in the 1 MiB message size: beside a body near it, the attributes
//     that do not fit are left out and the reason is cut (DeadLetters). If the dead-letter send
//     itself fails, that record and every later record of the group are
//     reported as failures (FIFO order) and nothing after it runs.
//  2. The decoded records run as ONE engine slice (runtime.SliceInput with
//     all of them, FirstDelivery when every record is on its first receive).
//     One slice per group rather than one per record: the engine is built
//     to fold a batch (two quick user messages are answered once, with both
//     in view), a batch costs one load and one commit instead of one each
//     per record, and FIFO order is kept because the engine folds the batch
//     in order. Redelivery is safe whichever way a batch is cut: every
//     message ID is deduplicated against history.
//  3. A slice that fails (a version conflict, throttling, a timeout, any
//     error RunSlice returns) reports every record of the slice: they are
//     hidden for a short delay that grows with their receive count
//     (Settler.Retry, DefaultRetryBase) and then delivered again, and
//     after the queue's maxReceiveCount the queue's redrive policy moves
//     them to the dead-letter queue. Other groups are not affected.
//  4. SliceResult.Rejected entries are moved to the dead-letter queue like
//     decoding failures; a permanent model failure (SliceResult.ModelErr)
//     already produced an error reply and is acknowledged.
//
// # Settling groups early (Handler.Settle, QueueSettler)
//
// As soon as a group is done, while other groups of the batch still run,
// its records are settled on their queue (found by the queue name in the
// record's EventSourceARN): the ones that succeeded are deleted with one
// DeleteMessageBatch, so the thread's next message can go to another
// invocation instead of waiting for the batch's slowest slice (a FIFO
// group stays locked while a record of it is in flight), and the failed
// ones are hidden with ChangeMessageVisibilityBatch for
// a delay that doubles with their highest receive count (2 s, 4 s,
// 8 s, ... at most 5 min) instead of the queue's visibility timeout. Both
// are best effort: the response reports the same failures either way, so
// when a call fails the event source mapping deletes the records when the
// invocation ends, or they wait out the visibility timeout, as without
// settling. The mapping's own delete of an already deleted record is a
// no-op.
//
// Each slice gets the invocation's deadline minus Margin, so there is time
// left to answer Lambda (the notice wait ends at the slices' deadline too). A panic in a group is recovered, logged with its
// stack, and reported as a failure of the group's records.
//
// # Round trips
//
// Every AWS client is given an HTTP client that counts requests, and the
// pgx pool a tracer that counts queries, batches, statement preparations
// and liveness pings, into a Counter carried by the slice's context. The
// per-slice log line reports them ("round_trips" and a breakdown by
// service). Model and tool-server HTTP requests are not counted.
//
// # Errors
//
// Configuration errors are *lambdafn.EnvError values naming the
// environment variable. Handle never returns an error to Lambda: a problem
// with one record is reported per record, so one bad input never fails a
// whole batch.
package serverless
