package dsql

import (
	"context"
	"strings"
	"testing"
)

// A rerun after an interrupted index build does not record the migration
// while the index is invalid. PostgreSQL leaves an invalid index behind
// when CREATE INDEX CONCURRENTLY fails, which stands in for an interrupted
// CREATE INDEX ASYNC on DSQL.
func TestMigrateChecksIndexValidity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newSchemaPool(t)
	for _, stmt := range []string{
		`DROP INDEX threads_parent_idx`,
		`DELETE FROM schema_migrations WHERE version = 2`,
		`INSERT INTO threads (id, parent, depth, spawn_at, version, length, format, state)
		 VALUES ('a', 'p', 1, 0, 1, 0, 1, '{}'), ('b', 'p', 1, 0, 1, 0, 1, '{}')`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := pool.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY threads_parent_idx ON threads (parent)`); err == nil {
		t.Fatal("the unique index build on duplicate parents succeeded; the test needs it to fail")
	}
	recorded := func() bool {
		var ok bool
		if err := collectOne(ctx, pool, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 2)`, &ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	err := Migrate(ctx, pool, Postgres)
	if err == nil || !strings.Contains(err.Error(), "threads_parent_idx exists but is not valid") || recorded() {
		t.Fatalf("Migrate over an invalid index: %v (recorded %v)", err, recorded())
	}
	if _, err := pool.Exec(ctx, `DROP INDEX threads_parent_idx`); err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, pool, Postgres); err != nil || !recorded() {
		t.Fatalf("Migrate after dropping it: %v (recorded %v)", err, recorded())
	}
	if err := checkIndexValid(ctx, pool, "threads_parent_idx"); err != nil {
		t.Fatal(err)
	}
}
