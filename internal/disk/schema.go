package disk

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] brings the schema from version i to i+1. They only ever
// get appended to: a released migration is never edited.
var migrations = []struct {
	name string
	sql  []string
	fill func(context.Context, *sql.Tx) error // run after sql, in its transaction
}{
	{"threads, items, dedup, inbox, timers", []string{
		`CREATE TABLE threads (
			id         TEXT PRIMARY KEY,
			parent     TEXT NOT NULL DEFAULT '',
			spawn_at   INTEGER NOT NULL DEFAULT 0,
			version    INTEGER NOT NULL,
			length     INTEGER NOT NULL,
			state      BLOB NOT NULL,
			frozen     BLOB,
			frozen_len INTEGER NOT NULL DEFAULT 0
		) WITHOUT ROWID`,
		`CREATE TABLE items (
			thread TEXT NOT NULL,
			pos    INTEGER NOT NULL,
			data   BLOB NOT NULL,
			PRIMARY KEY (thread, pos)
		) WITHOUT ROWID`,
		`CREATE TABLE dedup (
			thread  TEXT NOT NULL,
			id      TEXT NOT NULL,
			expires INTEGER NOT NULL,
			PRIMARY KEY (thread, id)
		) WITHOUT ROWID`,
		`CREATE TABLE inbox (
			seq    INTEGER PRIMARY KEY AUTOINCREMENT,
			thread TEXT NOT NULL,
			id     TEXT NOT NULL,
			body   BLOB NOT NULL,
			UNIQUE (thread, id)
		)`,
		`CREATE TABLE timers (
			thread TEXT NOT NULL,
			call   TEXT NOT NULL,
			at     INTEGER NOT NULL,
			body   BLOB NOT NULL,
			PRIMARY KEY (thread, call)
		) WITHOUT ROWID`,
	}, nil},
	{"threads.attention: what recovery must do for a thread", []string{
		`ALTER TABLE threads ADD COLUMN attention INTEGER NOT NULL DEFAULT 0`,
		`UPDATE threads SET attention = CASE
			WHEN coalesce(json_array_length(state, '$.outbox'), 0) > 0
			  OR (json_type(state, '$.pending') = 'object'
			      AND coalesce(json_extract(state, '$.pending.dispatched'), 0) = 0) THEN 1
			WHEN json_type(state, '$.pending') = 'object' THEN 2
			ELSE 0 END`,
		`CREATE INDEX threads_attention ON threads (attention, id) WHERE attention > 0`,
	}, nil},
	{"items in insertion order: a group commit appends its rows to the same pages", []string{
		`CREATE TABLE items_v3 (
			seq    INTEGER PRIMARY KEY,
			thread TEXT NOT NULL,
			pos    INTEGER NOT NULL,
			data   BLOB NOT NULL
		)`,
		`INSERT INTO items_v3 (thread, pos, data) SELECT thread, pos, data FROM items ORDER BY thread, pos`,
		`DROP TABLE items`,
		`ALTER TABLE items_v3 RENAME TO items`,
		`CREATE UNIQUE INDEX items_thread_pos ON items (thread, pos)`,
	}, nil},
	// History commits and inbox changes now reach these tables through the
	// journal (journal-*.log beside the database); this version makes an
	// older build, which would ignore the journal and lose what only it
	// holds, refuse the directory. And threads becomes a rowid table: a
	// WITHOUT ROWID row keeps at most about a quarter of a page in its
	// leaf, so a small thread's frame (under a KB on the benchmark's
	// infinity profile) took an overflow page of its own; in a rowid table
	// rows up to a page long stay in the leaf, several to a page.
	{"the journal; threads as a rowid table", []string{
		`CREATE TABLE threads_v4 (
			seq        INTEGER PRIMARY KEY,
			id         TEXT NOT NULL UNIQUE,
			parent     TEXT NOT NULL DEFAULT '',
			spawn_at   INTEGER NOT NULL DEFAULT 0,
			version    INTEGER NOT NULL,
			length     INTEGER NOT NULL,
			state      BLOB NOT NULL,
			frozen     BLOB,
			frozen_len INTEGER NOT NULL DEFAULT 0,
			attention  INTEGER NOT NULL DEFAULT 0
		)`,
		`INSERT INTO threads_v4 (id, parent, spawn_at, version, length, state, frozen, frozen_len, attention)
			SELECT id, parent, spawn_at, version, length, state, frozen, frozen_len, attention FROM threads ORDER BY id`,
		`DROP TABLE threads`,
		`ALTER TABLE threads_v4 RENAME TO threads`,
		`CREATE INDEX threads_attention ON threads (attention, id) WHERE attention > 0`,
	}, nil},
	{"dead letters survive restarts (redrive, resolution)", []string{
		`CREATE TABLE dead_letters (
			seq    INTEGER PRIMARY KEY AUTOINCREMENT,
			thread TEXT NOT NULL,
			id     TEXT NOT NULL,
			body   BLOB NOT NULL,
			reason TEXT NOT NULL,
			at     INTEGER NOT NULL,
			status TEXT NOT NULL,
			UNIQUE (thread, id)
		)`,
	}, nil},
	{"budgets: the ledger of tree budgets", []string{
		`CREATE TABLE ledger (
			tree TEXT PRIMARY KEY,
			data BLOB NOT NULL
		) WITHOUT ROWID`,
	}, nil},
	{"agent definition versions (pinned threads run them)", []string{
		`CREATE TABLE agent_versions (
			name       TEXT NOT NULL,
			hash       TEXT NOT NULL,
			definition BLOB NOT NULL,
			stored     INTEGER NOT NULL,
			PRIMARY KEY (name, hash)
		) WITHOUT ROWID`,
	}, nil},
	// GET /threads at a million threads: the root threads by their tree's
	// latest item time (the newest first is an index scan) and the
	// children by parent, so that a page reads its own trees and nothing
	// else. Roots stored before this version start at activity 0 (their
	// items' times are inside compressed frames) and move up at their
	// tree's next checkpointed commit.
	{"the tree index: roots by last activity, threads by parent", []string{
		`CREATE TABLE roots (
			id       TEXT PRIMARY KEY,
			activity INTEGER NOT NULL
		) WITHOUT ROWID`,
		`INSERT INTO roots (id, activity) SELECT id, 0 FROM threads WHERE parent = ''`,
		`CREATE INDEX roots_activity ON roots (activity DESC, id)`,
		`CREATE INDEX threads_parent ON threads (parent) WHERE parent != ''`,
	}, nil},
	// GET /threads rows, filters and per-version counts without loading a
	// thread: each thread's digest (runtime.Digest) with its parent (the
	// page's descendants query reads it, not threads) and what the agent
	// versions listing counts by; each root's status, agent and title in
	// its roots row, indexed for filters by status and agent, newest
	// first, and their number by status and agent (root_counts: a
	// filtered listing's total). fillDigests makes the digests of the
	// threads already stored.
	{"thread digests: GET /threads rows and filters without thread states", []string{
		`CREATE TABLE digests (
			id        TEXT PRIMARY KEY,
			parent    TEXT NOT NULL,
			agent     TEXT NOT NULL,
			hash      TEXT NOT NULL,
			pinned    INTEGER NOT NULL,
			versioned INTEGER NOT NULL,
			data      BLOB NOT NULL
		) WITHOUT ROWID`,
		`CREATE INDEX digests_parent ON digests (parent) WHERE parent != ''`,
		`CREATE INDEX digests_agent ON digests (agent, versioned, hash, pinned)`,
		`ALTER TABLE roots ADD COLUMN status TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE roots ADD COLUMN agent TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE roots ADD COLUMN versioned INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE roots ADD COLUMN title TEXT NOT NULL DEFAULT ''`,
		`CREATE INDEX roots_status ON roots (status, activity DESC, id)`,
		`CREATE INDEX roots_agent ON roots (agent, activity DESC, id)`,
		`CREATE TABLE root_counts (
			status    TEXT NOT NULL,
			agent     TEXT NOT NULL,
			versioned INTEGER NOT NULL,
			n         INTEGER NOT NULL,
			PRIMARY KEY (status, agent, versioned)
		) WITHOUT ROWID`,
		`INSERT INTO root_counts (status, agent, versioned, n) SELECT status, agent, versioned, count(*) FROM roots GROUP BY 1, 2, 3`,
	}, fillDigests},
	// Timers with a horizon (Timers.Horizon) read the rows coming due,
	// by time.
	{"timers by due time", []string{
		`CREATE INDEX timers_at ON timers (at)`,
	}, nil},
	// GET /threads?q= without reading every root (titles.go): the roots'
	// titles, lower-cased, in an FTS5 trigram index, and each roots row
	// the rowid of its entry. fillTitles indexes the roots already stored.
	// (SQLite 3.54's DROP TABLE of this table leaves its shadow table
	// root_titles_content behind: whatever drops it must drop that too.)
	{"the title index: roots by trigrams of their title", []string{
		`CREATE VIRTUAL TABLE root_titles USING fts5(id UNINDEXED, title, content='', contentless_delete=1,
			contentless_unindexed=1, tokenize='trigram case_sensitive 1', detail=none)`,
		`ALTER TABLE roots ADD COLUMN title_row INTEGER NOT NULL DEFAULT 0`,
	}, fillTitles},
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return len(migrations) }

// migrate brings the database at path up to SchemaVersion, each step in a
// transaction of its own. A database of a newer version, or one that has
// tables but no version (not ours), is refused untouched.
func migrate(ctx context.Context, db *sql.DB, path string) error {
	return migrateTo(ctx, db, path, len(migrations))
}

func migrateTo(ctx context.Context, db *sql.DB, path string, target int) error {
	var v, tables int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("%w: reading the schema version of %s: %v (it was left as it is)", ErrNotOurs, path, err)
	}
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&tables); err != nil {
		return fmt.Errorf("%w: reading the tables of %s: %v (it was left as it is)", ErrNotOurs, path, err)
	}
	switch {
	case v > len(migrations):
		return fmt.Errorf("%w: %s has schema version %d, this build knows up to %d; upgrade agentslice (the file was left as it is)",
			ErrNewerVersion, path, v, len(migrations))
	case v == 0 && tables > 0:
		return fmt.Errorf("%w: %s has tables but no agentslice schema version (it was left as it is)", ErrNotOurs, path)
	}
	if v == 0 {
		// Both only take effect before the first table exists, page_size
		// first. 2 KiB pages: a thread's frozen frame (tens of KB) is a chain
		// of overflow pages whose last one is on average half empty. On the
		// density benchmark's unique profile (22 KB frames) 4 KiB pages
		// took 25.2 KB on disk per agent, 2 KiB 22.9 KB and 1 KiB 22.8 KB,
		// but 1 KiB pages made checkpoints' writes cost 2.8 times the CPU
		// of 4 KiB ones and 2 KiB 1.7 times. With auto_vacuum, freed pages
		// (item rows merged into frozen frames) can be given back to the
		// file system (Checkpoint runs incremental_vacuum).
		if _, err := db.ExecContext(ctx, "PRAGMA page_size = 2048"); err != nil {
			return fmt.Errorf("disk: setting page_size on %s: %w", path, err)
		}
		if _, err := db.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
			return fmt.Errorf("disk: setting auto_vacuum on %s: %w", path, err)
		}
	}
	if _, err := db.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		return fmt.Errorf("disk: switching %s to WAL: %w", path, err)
	}
	for ; v < target; v++ {
		m := migrations[v]
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("disk: migrating %s to version %d: %w", path, v+1, err)
		}
		for _, q := range m.sql {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				tx.Rollback()
				return fmt.Errorf("disk: migrating %s to version %d (%s): %w", path, v+1, m.name, err)
			}
		}
		if m.fill != nil {
			if err := m.fill(ctx, tx); err != nil {
				tx.Rollback()
				return fmt.Errorf("disk: migrating %s to version %d (%s): %w", path, v+1, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("disk: recording schema version %d in %s: %w", v+1, path, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("disk: migrating %s to version %d: %w", path, v+1, err)
		}
	}
	return nil
}
