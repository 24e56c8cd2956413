package dsql

// The statements of the store. schema_test.go scans them, with the DDL, for
// what DSQL does not accept.

// loadSQL returns a thread's view in one query, whatever its depth:
//
//	part 0: the thread row (version, length, spawn_at, state), and as pos
//	        the load's base b: 0 for a whole view, else (a slice's load,
//	        $2) the thread's view start when it lies within its view and
//	        every own item before it records its input;
//	part 1: for each ancestor (depth = its place, root first), its own items
//	        at view positions in [b, the cutoff the thread inherits);
//	part 2: the thread's own items from view position b on;
//	part 3: the inputs among $3 that own items before b consumed (the
//	        input as body).
//
// Rows are ordered in Go (part, depth, pos, chunk), not by the server: no
// server-side sort of wide rows, and no dependence on the plan.
//
// $1 id, $2 for a slice (boolean), $3 input IDs (text[], may be NULL).
const loadSQL = `WITH t AS (
SELECT id, version, length, spawn_at, format, state,
       CASE WHEN $2::boolean AND view_start > 0 AND view_start <= spawn_at + length
                 AND (inputs_from = 0 OR view_start <= spawn_at)
            THEN view_start ELSE 0 END AS b
  FROM threads
 WHERE id = $1::text)
SELECT 0 AS part, 0 AS depth, t.b AS pos, 0 AS chunk,
       t.version, t.length, t.spawn_at, t.format, t.state AS body
  FROM t
UNION ALL
SELECT 1, a.depth, i.pos, i.chunk, 0, 0, 0, i.format, i.body
  FROM t
  JOIN thread_ancestors a ON a.thread_id = t.id
  JOIN items i ON i.thread_id = a.ancestor_id AND i.pos < a.view_cut - a.base AND i.pos >= t.b - a.base
UNION ALL
SELECT 2, 0, i.pos, i.chunk, 0, 0, 0, i.format, i.body
  FROM items i
 WHERE i.thread_id = $1::text
   AND i.pos >= (SELECT COALESCE(max(t.b - t.spawn_at), 0) FROM t)
UNION ALL
SELECT 3, 0, i.pos, 0, 0, 0, 0, 0, i.input
  FROM t
  JOIN items i ON i.thread_id = t.id AND i.input = ANY($3::text[]) AND i.pos < t.b - t.spawn_at`

// updateThreadSQL writes the thread's new version, length and state, and
// fails the transaction when the stored version is not the expected one:
// the CASE casts a marker text to bigint, which raises 22P02 with the marker
// in the message (the cast refers to a column, so the planner cannot fold it
// before the row is read). A missing row updates nothing; guardSQL or
// insertRootSQL deal with that.
// It keeps view_start (the state's ViewStart) beside the state, and sets
// inputs_from for a thread created before items recorded their input: the
// items from this commit on do.
//
// $1 id, $2 expected version, $3 stored length expected, $4 new version,
// $5 new length, $6 state format, $7 state, $8 view start.
const updateThreadSQL = `UPDATE threads
   SET version = CASE
         WHEN version <> $2::bigint THEN ('agentslice: version conflict: stored version ' || version)::bigint
         WHEN length <> $3::bigint THEN ('agentslice: length mismatch: stored length ' || length)::bigint
         ELSE $4::bigint END,
       length = $5, format = $6, state = $7, view_start = $8::bigint,
       inputs_from = COALESCE(inputs_from, $3::bigint)
 WHERE id = $1`

// insertRootSQL creates the thread row on a first commit (expected version
// 0) of a thread that no parent created. Two first commits racing: the
// loser gets a unique violation (ErrConflict).
//
// $1 id, $2 parent (informational), $3 version, $4 length, $5 format, $6 state,
// $7 view start.
const insertRootSQL = `INSERT INTO threads (id, parent, depth, spawn_at, version, length, format, state, view_start, inputs_from)
SELECT $1::text, $2::text, 0, 0, $3::bigint, $4::bigint, $5::smallint, $6::text, $7::bigint, 0
 WHERE NOT EXISTS (SELECT 1 FROM threads WHERE id = $1::text)`

// insertForkSQL creates the row of a fork (runtime.ForkPoint) on its first
// commit: a root thread (no parent) whose view inherits the source's up to
// spawn_at, one level deeper than the source so that its ancestor rows
// (insertAncestorsSQL, from the source's) keep their depths apart. A
// source that does not exist inserts nothing (the server checks first).
//
// $1 id, $2 source, $3 spawn_at, $4 version, $5 length, $6 format, $7 state,
// $8 view start.
const insertForkSQL = `INSERT INTO threads (id, parent, depth, spawn_at, version, length, format, state, view_start, inputs_from)
SELECT $1::text, '', p.depth + 1, $3::bigint, $4::bigint, $5::bigint, $6::smallint, $7::text, $8::bigint, 0
  FROM threads p
 WHERE p.id = $2::text AND NOT EXISTS (SELECT 1 FROM threads WHERE id = $1::text)`

// guardSQL fails the transaction (22P02 with the conflict marker) when the
// thread row is missing although a version > 0 was expected. count(*) keeps
// the cast from being folded at plan time.
//
// $1 id.
const guardSQL = `SELECT CASE WHEN count(*) = 1 THEN 0
            ELSE ('agentslice: version conflict: thread not found, rows ' || count(*))::bigint END
  FROM threads
 WHERE id = $1`

// insertItemSQL writes one row of an item; the first chunk's carries the
// item's input ("" for none), the others NULL.
//
// $1 thread, $2 pos, $3 chunk, $4 format, $5 body, $6 input.
const insertItemSQL = `INSERT INTO items (thread_id, pos, chunk, format, body, input) VALUES ($1, $2, $3, $4, $5, $6)`

// insertChildSQL creates a child thread at version 0. Its depth comes from
// the parent row, written earlier in the same transaction; a child that
// exists raises a unique violation (ErrConflict).
//
// $1 child, $2 parent, $3 spawn_at, $4 format, $5 state, $6 view start.
const insertChildSQL = `INSERT INTO threads (id, parent, depth, spawn_at, version, length, format, state, view_start, inputs_from)
VALUES ($1, $2, (SELECT p.depth + 1 FROM threads p WHERE p.id = $2), $3, 0, 0, $4, $5, $6, 0)`

// insertAncestorsSQL derives the child's ancestor rows from the parent's:
// each ancestor's cutoff is capped at the spawn point, and the parent itself
// is added with the spawn point as cutoff and its own spawn_at as base.
//
// $1 child, $2 parent, $3 spawn_at.
const insertAncestorsSQL = `INSERT INTO thread_ancestors (thread_id, depth, ancestor_id, view_cut, base)
SELECT $1::text, a.depth, a.ancestor_id, LEAST(a.view_cut, $3::bigint), a.base
  FROM thread_ancestors a
 WHERE a.thread_id = $2::text
UNION ALL
SELECT $1::text, p.depth, p.id, $3::bigint, p.spawn_at
  FROM threads p
 WHERE p.id = $2::text`

// insertAgentSQL keeps an agent definition version unless it is kept.
//
// $1 name, $2 hash, $3 definition (JSON), $4 stored (Unix microseconds).
const insertAgentSQL = `INSERT INTO agent_versions (name, hash, definition, stored)
SELECT $1::text, $2::text, $3::text, $4::bigint
 WHERE NOT EXISTS (SELECT 1 FROM agent_versions WHERE name = $1::text AND hash = $2::text)`

// loadAgentsSQL reads every kept version; they are few (one per
// definition change), sorted in the query.
const loadAgentsSQL = `SELECT name, hash, definition, stored FROM agent_versions ORDER BY stored, name, hash`

// dmlStatements lists the statements above for the DSQL compatibility scan.
var dmlStatements = map[string]string{
	"load":         loadSQL,
	"updateThread": updateThreadSQL,
	"insertRoot":   insertRootSQL,
	"insertFork":   insertForkSQL,
	"guard":        guardSQL,
	"insertItem":   insertItemSQL,
	"insertChild":  insertChildSQL,
	"ancestors":    insertAncestorsSQL,
	"insertAgent":  insertAgentSQL,
	"loadAgents":   loadAgentsSQL,
	"migrations":   createMigrationsSQL,
	"applied":      appliedSQL,
	"record":       recordSQL,
	"waitForJob":   waitForJobSQL,
	"threadClass":  threadClassSQL,
	// backfill.go
	"backfillThreads": backfillThreadsSQL,
	"backfillThread":  backfillThreadSQL,
	"backfillFirst":   backfillFirstSQL,
	"backfillItems":   backfillItemsSQL,
	"backfillInput":   backfillInputSQL,
	"backfillMark":    backfillMarkSQL,
}
