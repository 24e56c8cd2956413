// Package dedup is the processed-message-ID store on DynamoDB: a
// runtime.DedupStore that tells a slice which messages of a batch a thread
// has already processed, so a redelivered SQS message is skipped without
// loading history.
//
// It owns the table layout and nothing else. It must not decide what a
// duplicate means (the engine does, and history stays the authority), and it
// must not keep anything per thread that grows with the thread's age.
//
// # Layout
//
// One small item per (thread, message ID):
//
//	pk          S  thread ID + " " + message ID   (partition key)
//	expires_at  N  Unix seconds; the table's TTL attribute
//
// A thread can process millions of messages without any item growing; the
// table's size is bounded by the message rate times the TTL. (Keeping a set
// of IDs per thread would hit DynamoDB's 400 KB item limit.) The separator is
// a space, which runtime IDs cannot contain; Seen and Mark reject IDs that
// do, so two (thread, ID) pairs never share a key. DynamoDB deletes expired
// items lazily (typically within days), so reads treat an item whose
// expires_at has passed as absent, and Mark may overwrite it.
//
// # Requests
//
// Mark writes each ID with its own PutItem, conditional on
// attribute_not_exists(pk) OR expires_at <= now, several at once (Config.
// Parallel). BatchWriteItem is not used because it accepts no condition
// expressions: a conditional put is what keeps the first expiry of a record
// (a redelivery does not extend it) and lets a record that expired be
// replaced. A ConditionalCheckFailedException means the ID was already marked
// and is not an error. A slice marks one to a few IDs, so the parallel puts
// cost one round trip of latency.
//
// Seen reads with BatchGetItem (at most 100 keys per request) and
// ConsistentRead, so a mark made just before is always seen. UnprocessedKeys
// are requested again with jittered exponential backoff, up to
// Config.Attempts requests per chunk.
//
// # Errors
//
//   - ErrThrottled (test with errors.Is): DynamoDB throttled the request
//     (ProvisionedThroughputExceeded, ThrottlingException, RequestLimitExceeded)
//     after the SDK's own retries, or left keys unprocessed after
//     Config.Attempts requests. Retryable: retry the slice later.
//   - ErrInvalidID: a thread or message ID is empty or contains the key
//     separator. Not retryable; the runtime validates IDs before they get here.
//   - anything else (network, access denied, missing table) is wrapped with
//     what was being done; treat it as retryable unless the caller knows better.
//
// CreateTable creates the table with this layout for tests and migrations;
// in production the CDK stack creates it.
package dedup
