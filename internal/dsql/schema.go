package dsql

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is what the store and Migrate need of a connection: *pgxpool.Pool and
// *pgx.Conn both have it.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// migration is one versioned schema change: DDL statements, each run in a
// transaction of its own (DSQL allows one DDL statement per transaction and
// no DML beside it). Statements must be idempotent (IF NOT EXISTS) so that a
// migration interrupted between two statements can run again.
type migration struct {
	version int
	name    string
	ddl     func(d Dialect) []string
}

// createIndex is CREATE INDEX ASYNC on DSQL and plain CREATE INDEX on
// PostgreSQL.
func createIndex(d Dialect, name, table, columns string) string {
	async := ""
	if d == DSQL {
		async = " ASYNC"
	}
	return fmt.Sprintf("CREATE INDEX%s IF NOT EXISTS %s ON %s (%s)", async, name, table, columns)
}

// migrations is the schema history. Append; never edit a migration that may
// have run somewhere.
var migrations = []migration{
	{1, "threads, items, thread_ancestors", func(Dialect) []string {
		return []string{
			`CREATE TABLE IF NOT EXISTS threads (
	id       TEXT     NOT NULL PRIMARY KEY,
	parent   TEXT     NOT NULL,
	depth    INTEGER  NOT NULL,
	spawn_at BIGINT   NOT NULL,
	version  BIGINT   NOT NULL,
	length   BIGINT   NOT NULL,
	format   SMALLINT NOT NULL,
	state    TEXT     NOT NULL
)`,
			`CREATE TABLE IF NOT EXISTS items (
	thread_id TEXT     NOT NULL,
	pos       BIGINT   NOT NULL,
	chunk     INTEGER  NOT NULL,
	format    SMALLINT NOT NULL,
	body      TEXT     NOT NULL,
	PRIMARY KEY (thread_id, pos, chunk)
)`,
			`CREATE TABLE IF NOT EXISTS thread_ancestors (
	thread_id   TEXT    NOT NULL,
	depth       INTEGER NOT NULL,
	ancestor_id TEXT    NOT NULL,
	view_cut    BIGINT  NOT NULL,
	base        BIGINT  NOT NULL,
	PRIMARY KEY (thread_id, depth)
)`,
		}
	}},
	{2, "threads_parent_idx", func(d Dialect) []string {
		// Finds a thread's children (closing a subtree, operator tools)
		// without a scan. parent never changes after insert, so the index
		// costs one write per thread created.
		return []string{createIndex(d, "threads_parent_idx", "threads", "parent")}
	}},
	{3, "agent_versions", func(Dialect) []string {
		// Every agent definition version a deployment ran, so that pinned
		// threads keep theirs (runtime.AgentStore).
		return []string{`CREATE TABLE IF NOT EXISTS agent_versions (
	name       TEXT   NOT NULL,
	hash       TEXT   NOT NULL,
	definition TEXT   NOT NULL,
	stored     BIGINT NOT NULL,
	PRIMARY KEY (name, hash)
)`}
	}},
	{4, "tree_ledger", func(Dialect) []string {
		// The budgets of trees of threads on serve's PostgreSQL store
		// (Ledger): one row per tree whose limit was set. The slice
		// function keeps its trees' budgets in DynamoDB and has no grant.
		return []string{`CREATE TABLE IF NOT EXISTS tree_ledger (
	tree    TEXT   NOT NULL PRIMARY KEY,
	version BIGINT NOT NULL,
	data    TEXT   NOT NULL
)`}
	}},
	{5, "load from the compaction point", func(d Dialect) []string {
		// A slice loads a thread from its latest compaction point
		// (threads.view_start, the state's ViewStart) and learns in the
		// same query whether a message it is about to fold was consumed by
		// an item it left out (items.input, the item's Input, on its first
		// chunk; items_input_idx finds them). Columns added to tables
		// that have rows are NULL in them (DSQL adds no column with a
		// default): threads.inputs_from is the own position from which a
		// thread's items record their input, 0 for every thread created
		// after this migration and set at the first commit after it for
		// one created before, whose older items are never left out of a
		// load (they record no input).
		return []string{
			`ALTER TABLE threads ADD COLUMN IF NOT EXISTS view_start BIGINT`,
			`ALTER TABLE threads ADD COLUMN IF NOT EXISTS inputs_from BIGINT`,
			`ALTER TABLE items ADD COLUMN IF NOT EXISTS input TEXT`,
			createIndex(d, "items_input_idx", "items", "thread_id, input, pos"),
		}
	}},
}

const (
	createMigrationsSQL = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER     NOT NULL PRIMARY KEY,
	name       TEXT        NOT NULL,
	applied_at TIMESTAMPTZ NOT NULL
)`
	appliedSQL = `SELECT version FROM schema_migrations`
	// recordSQL skips a version another migrator recorded first.
	recordSQL = `INSERT INTO schema_migrations (version, name, applied_at)
SELECT $1::integer, $2::text, now()
 WHERE NOT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1::integer)`
	waitForJobSQL = `SELECT sys.wait_for_job($1)`
)

// SchemaVersion is the version Migrate brings a database to.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// Migrate brings the schema to SchemaVersion: it creates schema_migrations if
// needed, then runs every migration not recorded there, each DDL statement in
// its own transaction, and records each migration after its statements
// succeeded. Running it again, or from two processes at once, is safe.
//
// It is a deployment step (`agentslice migrate`), not something a Lambda
// does at cold start.
func Migrate(ctx context.Context, db DB, dialect Dialect) error {
	return migrate(ctx, db, dialect, RetryPolicy{})
}

func migrate(ctx context.Context, db DB, dialect Dialect, retry RetryPolicy) error {
	if !dialect.Valid() {
		return &ConfigError{Field: "Dialect", Reason: fmt.Sprintf("%q is unknown: use %q or %q", dialect, DSQL, Postgres)}
	}
	if err := execDDL(ctx, db, dialect, retry, createMigrationsSQL); err != nil {
		return fmt.Errorf("dsql: migrate: creating schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	err := retry.run(ctx, "schema_migrations", func() (bool, error) {
		rows, err := db.Query(ctx, appliedSQL)
		if err != nil {
			return retryable(err)
		}
		vs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return retryable(err)
		}
		for _, v := range vs {
			applied[int(v)] = true
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("dsql: migrate: reading schema_migrations: %w", err)
	}
	for _, m := range migrations {
		if applied[m.version] {
			continue
		}
		for _, stmt := range m.ddl(dialect) {
			if err := execDDL(ctx, db, dialect, retry, stmt); err != nil {
				return fmt.Errorf("dsql: migrate: migration %d (%s): %w", m.version, m.name, err)
			}
			// CREATE INDEX ... IF NOT EXISTS is a no-op for an index a
			// previous, interrupted run left behind (an ASYNC build still
			// running or failed): record the migration only once the
			// index is valid.
			if name := createdIndex(stmt); name != "" {
				if err := checkIndexValid(ctx, db, name); err != nil {
					return fmt.Errorf("dsql: migrate: migration %d (%s) not recorded: %w", m.version, m.name, err)
				}
			}
		}
		err := retry.run(ctx, "schema_migrations", func() (bool, error) {
			_, err := db.Exec(ctx, recordSQL, m.version, m.name)
			if isUniqueViolation(err) {
				return false, nil // recorded by a concurrent migrator
			}
			return retryable(err)
		})
		if err != nil {
			return fmt.Errorf("dsql: migrate: recording migration %d: %w", m.version, err)
		}
	}
	return nil
}

// execDDL runs one DDL statement as a transaction of its own. On DSQL a
// CREATE INDEX ASYNC returns a job ID; Migrate waits for the job so that a
// recorded migration means a usable index.
func execDDL(ctx context.Context, db DB, dialect Dialect, retry RetryPolicy, stmt string) error {
	return retry.run(ctx, "schema", func() (bool, error) {
		if dialect == DSQL && strings.Contains(stmt, "INDEX ASYNC") {
			rows, err := db.Query(ctx, stmt)
			if err != nil {
				return retryable(err)
			}
			jobs, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return retryable(err)
			}
			for _, job := range jobs {
				rows, err := db.Query(ctx, waitForJobSQL, job)
				if err != nil {
					return retryable(fmt.Errorf("waiting for index job %s: %w", job, err))
				}
				ok, err := pgx.CollectOneRow(rows, pgx.RowTo[bool])
				if err != nil {
					return retryable(fmt.Errorf("waiting for index job %s: %w", job, err))
				}
				if !ok {
					return false, fmt.Errorf("index job %s failed (see sys.jobs)", job)
				}
			}
			return false, nil
		}
		_, err := db.Exec(ctx, stmt)
		return retryable(err)
	})
}

var createIndexName = regexp.MustCompile(`^CREATE (?:UNIQUE )?INDEX(?: ASYNC)? IF NOT EXISTS ([a-z_][a-z0-9_]*) `)

// createdIndex returns the index a CREATE INDEX statement creates, "" for
// other statements.
func createdIndex(stmt string) string {
	if m := createIndexName.FindStringSubmatch(stmt); m != nil {
		return m[1]
	}
	return ""
}

const indexValidSQL = `SELECT i.indisvalid FROM pg_index i
  JOIN pg_class c ON c.oid = i.indexrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relname = $1 AND n.nspname = current_schema()`

// checkIndexValid fails unless the index exists in the current schema and
// is valid (pg_index.indisvalid).
func checkIndexValid(ctx context.Context, db DB, name string) error {
	rows, err := db.Query(ctx, indexValidSQL, name)
	if err != nil {
		return fmt.Errorf("checking index %s: %w", name, err)
	}
	valid, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		return fmt.Errorf("checking index %s: %w", name, err)
	}
	switch {
	case len(valid) == 0:
		return fmt.Errorf("index %s does not exist after creating it", name)
	case !valid[0]:
		return fmt.Errorf("index %s exists but is not valid (an interrupted build; on DSQL its job may still run, see sys.jobs): wait for the job, or DROP INDEX %s, then run migrate again", name, name)
	}
	return nil
}

// retryable reports OCC errors (worth running the transaction again) beside
// the error itself.
func retryable(err error) (bool, error) {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && isOCC(pg) {
		return true, err
	}
	return false, err
}

func isUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505"
}
