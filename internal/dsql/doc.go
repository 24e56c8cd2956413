// Package dsql is the runtime.HistoryStore on Amazon Aurora DSQL, through
// pgx/v5. It is tested on PostgreSQL 15, which accepts everything DSQL does.
//
// It owns the SQL of the history: the schema and its migrations, the
// one-query load of a thread's view and the one-round-trip commit of a turn.
// It must not hold agent logic (folding messages, compaction decisions) and
// must not create schema at cold start: Migrate is a separate step run by the
// `agentslice migrate` command.
//
// # Schema
//
//	threads          (id PK, parent, depth, spawn_at, version, length, format, state TEXT,
//	                  view_start, inputs_from)
//	items            (thread_id, pos, chunk, format, body TEXT, input)   PK (thread_id, pos, chunk)
//	                 items_input_idx (thread_id, input, pos)
//	thread_ancestors (thread_id, depth, ancestor_id, view_cut, base)  PK (thread_id, depth)
//	agent_versions   (name, hash, definition TEXT, stored)  PK (name, hash)
//	tree_ledger      (tree PK, version, data TEXT)   serve's trees' budgets (Ledger)
//	schema_migrations(version PK, name, applied_at)
//
// A thread's own history item at position pos is one row of items (several
// rows, chunk 0..k-1, when its encoding is larger than Limits.ChunkBytes).
// The body is the JSON of runtime.Item (its json tags); format says how a body
// or a state is encoded (1 = that JSON), so an encoding can change without
// rewriting old rows. Items keep their IDs whole and the state is the JSON
// of runtime.ThreadState, so a field the state gains (the thread's
// incarnation, say) needs no migration, and a state written before it
// reads as one without it.
//
// spawn_at of a thread is how many items it inherits: a position in its
// parent's full view (inherited + own), as runtime.ChildThread.SpawnAt says.
// thread_ancestors holds, for each thread, one row per ancestor, root first:
// view_cut is how much of that ancestor's full view the thread inherits and
// base is that ancestor's own spawn_at, so the ancestor's own items
// [0, view_cut-base) belong to the thread's view. A child's rows are derived
// in SQL, in the commit that creates it, from its parent's rows: each
// ancestor's view_cut becomes LEAST(view_cut, spawn_at) (positions in a
// child's inherited prefix are the same numbers in its parent's view), and
// the parent itself gets (view_cut = spawn_at, base = parent's spawn_at).
// Loading is therefore one query whatever the depth: the thread row, a join
// of its thread_ancestors rows with items below each cutoff, and its own
// items (see loadSQL).
//
// A slice's load (LoadView, LoadViewFor: runtime.ViewLoader and
// runtime.InputViewLoader) starts at the thread's view start, its latest
// compaction point (view_start, the state's ViewStart), and answers in the
// same query which of the batch's message IDs an own item it left out
// consumed (items.input, the item's Input on its first chunk). The columns
// came with migration 5 and are NULL in rows written before it:
// inputs_from is the own position from which a thread's items record their
// input (0 for threads created since; for older ones, set at their first
// commit after it), and a load never leaves out own items before it.
// Backfill (`agentslice migrate --backfill`) records the input of those
// older items and sets inputs_from to 0, after which such a thread loads
// from its view start too (backfill.go).
//
// # What DSQL accepts, and so all this package uses
//
//   - No foreign keys, triggers, temporary tables, TRUNCATE, SAVEPOINT,
//     extensions, sequences/SERIAL/IDENTITY, JSON/JSONB column types (JSON is
//     stored as TEXT), CREATE TABLE AS, partitions, COLLATE.
//   - Secondary indexes are created with CREATE INDEX ASYNC on DSQL (and
//     waited for with sys.wait_for_job); PostgreSQL gets plain CREATE INDEX.
//   - One DDL statement per transaction, never DDL and DML in one
//     transaction: Migrate runs every statement on its own and records a
//     migration in schema_migrations in a separate transaction.
//   - Per write transaction at most 3,000 rows and 10 MiB; per row 2 MiB;
//     per non-key column 1 MiB; per primary key 1 KiB. Commit checks Limits
//     before sending and splits large items into chunks.
//   - The memory of one query is bounded. A load reads a thread's whole
//     view (every own item, not only what follows the latest summary), so
//     it grows with the thread's age: Load counts the bytes it reads and
//     stops past Limits.MaxLoadBytes (default 32 MiB) with a
//     *LoadTooLargeError naming the thread, and reports the server's own
//     refusal (53200, 54000) the same way, rather than failing with a bare
//     database error or running the function out of memory.
//   - Optimistic concurrency: SQLSTATE 40001 with codes OC000 (data) and
//     OC001 (schema) mean "retry the transaction". Connections live at most
//     one hour; authentication is an IAM token presented as the password,
//     over TLS.
//   - DSQL bills each transaction by the bytes it reads and writes
//     (DPUs). Options.Meter, when set, is told the size of every row each
//     load read and each commit wrote (meter.go); the cost model
//     (internal/cost) and the storage load test price them.
//
// schema_test.go scans every statement this package sends for the forbidden
// constructs.
//
// # Commit
//
// A commit is one pgx.Batch, sent in one round trip and run by the server as
// one implicit transaction (the batch ends with a single Sync, so an error in
// any statement rolls back all of them):
//
//  1. UPDATE the thread row. Its SET evaluates a CASE that casts an
//     "agentslice: version conflict" text to bigint when the stored version is
//     not the expected one, so a mismatch is an error that aborts the
//     transaction instead of an UPDATE of zero rows.
//  2. Version 0: INSERT the thread row when it does not exist (a new root).
//     Version > 0: a guard SELECT that fails the same way when the row is
//     missing.
//  3. One INSERT per item row.
//  4. Per child: INSERT its thread row (a duplicate key means the child
//     exists: ErrConflict, nothing applied) and INSERT ... SELECT its
//     thread_ancestors rows from the parent's.
//
// So a commit of n item rows and k children is 2 + n + 2k statements. OCC
// failures are retried with jittered backoff (RetryPolicy); a version
// mismatch is not retried.
//
// # Error kinds
//
//   - *ConflictError (errors.Is(err, runtime.ErrConflict)): the commit lost:
//     version mismatch, a row it creates already exists, or OCC conflicts
//     outlasted the retries (Reason tells which). Nothing was applied.
//   - *TooLargeError (errors.Is(err, ErrTooLarge)), wrapped in
//     runtime.Permanent: the commit exceeds a DSQL per-transaction, per-row or
//     per-column limit. Retrying cannot help.
//   - *LoadTooLargeError (errors.Is(err, ErrLoadTooLarge)), wrapped in
//     runtime.Permanent: the thread's view is larger than one load may
//     read. Every slice of that thread fails until it is smaller (paged
//     loading is follow-up work).
//   - *ConfigError: a Config field is missing or wrong; the message names it.
//   - anything else: the commit was rejected as malformed (a bug in the
//     caller; the message says which field) or the database failed
//     (transient: retry the slice).
package dsql
