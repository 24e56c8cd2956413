package dsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
)

func TestGrantStatements(t *testing.T) {
	t.Parallel()
	const arn = "arn:aws:iam::123456789012:role/Agentslice-SliceFunctionRole'x"
	dsql := grantStatements(DSQL, "public", "agentslice_app", arn, false, false, appGrants)
	want := []string{
		`CREATE ROLE "agentslice_app" WITH LOGIN`,
		`GRANT USAGE ON SCHEMA "public" TO "agentslice_app"`,
		`GRANT SELECT, INSERT, UPDATE ON threads TO "agentslice_app"`,
		`GRANT SELECT, INSERT ON items TO "agentslice_app"`,
		`GRANT SELECT, INSERT ON thread_ancestors TO "agentslice_app"`,
		`GRANT SELECT ON agent_versions TO "agentslice_app"`,
		`AWS IAM GRANT "agentslice_app" TO 'arn:aws:iam::123456789012:role/Agentslice-SliceFunctionRole''x'`,
	}
	if !slices.Equal(dsql, want) {
		t.Fatalf("DSQL statements:\n%s", strings.Join(dsql, "\n"))
	}
	// The DSQL-only statement never reaches PostgreSQL; an existing role
	// and mapping are not created again.
	for _, s := range grantStatements(Postgres, "public", "agentslice_app", arn, false, false, appGrants) {
		if strings.Contains(s, "AWS IAM") {
			t.Fatalf("PostgreSQL statement %q", s)
		}
	}
	again := grantStatements(DSQL, "public", "agentslice_app", arn, true, true, appGrants)
	if len(again) != len(want)-2 || strings.Contains(strings.Join(again, ";"), "CREATE ROLE") {
		t.Fatalf("rerun statements: %q", again)
	}
	// No DDL or DELETE right beyond the store's DML.
	for _, s := range dsql {
		for _, bad := range []string{"ALL", "CREATE ON", "DELETE", "TRUNCATE", "schema_migrations"} {
			if strings.Contains(s, bad) {
				t.Fatalf("statement %q grants %s", s, bad)
			}
		}
	}
}

func TestGrantAppRoleRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dialect   Dialect
		role, arn string
		field     string
	}{
		{DSQL, "agentslice_app", "", "iamARN"},
		{DSQL, "agentslice_app", "123456789012", "iamARN"},
		{Postgres, "Robert'); DROP", "", "role"},
		{Postgres, "admin", "", "role"},
	} {
		err := GrantAppRole(context.Background(), nil, tc.dialect, tc.role, tc.arn)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s %q %q: %v, want a ConfigError on %s", tc.dialect, tc.role, tc.arn, err, tc.field)
		}
	}
}

// appRolePool migrates a fresh schema as its owner, runs GrantAppRole
// (twice: it is idempotent) for a new role, and returns a pool connected as
// that role.
func appRolePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	_, pool := rolePool(t, "as_app_", GrantAppRole)
	return pool
}

// rolePool is appRolePool for any of the grant functions; it returns the
// schema owner's pool too.
func rolePool(t *testing.T, prefix string, grantFn func(context.Context, DB, Dialect, string, string) error) (owner, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	owner = newSchemaPool(t)
	var can bool
	if err := collectOne(ctx, owner, `SELECT rolcreaterole OR rolsuper FROM pg_roles WHERE rolname = current_user`, &can); err != nil {
		t.Fatal(err)
	}
	if !can {
		// scripts/services/postgres.sh gives the test role CREATEROLE; a
		// server started before that change has to be restarted once.
		t.Skip("the test database role may not create roles (no CREATEROLE): restart scripts/services/postgres.sh")
	}
	var rnd [5]byte
	_, _ = rand.Read(rnd[:])
	role := prefix + hex.EncodeToString(rnd[:])
	t.Cleanup(func() {
		// Before the schema goes (cleanups run last first).
		_, _ = owner.Exec(context.Background(), `DROP OWNED BY "`+role+`"`)
		_, _ = owner.Exec(context.Background(), `DROP ROLE IF EXISTS "`+role+`"`)
	})
	for range 2 {
		if err := grantFn(ctx, owner, Postgres, role, ""); err != nil {
			t.Fatal(err)
		}
	}
	// PostgreSQL only: a password, since this role does not log in with
	// an IAM token here.
	if _, err := owner.Exec(ctx, `ALTER ROLE "`+role+`" PASSWORD 'app-test'`); err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := collectOne(ctx, owner, `SELECT current_schema()`, &schema); err != nil {
		t.Fatal(err)
	}
	pc := owner.Config().Copy()
	pc.ConnConfig.User, pc.ConnConfig.Password = role, "app-test"
	pc.ConnConfig.RuntimeParams["search_path"] = schema
	var err error
	pool, err = pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return owner, pool
}

// The whole history-store conformance suite passes as the app role: the
// grants cover everything the store does.
func TestStoreRunsAsAppRole(t *testing.T) {
	t.Parallel()
	storetest.RunHistory(t, func(t *testing.T) runtime.HistoryStore {
		return New(appRolePool(t), Options{})
	})
}

// The app role reads the agent versions the deploy stored.
func TestAppRoleReadsAgentVersions(t *testing.T) {
	t.Parallel()
	pool := appRolePool(t)
	if _, err := New(pool, Options{}).LoadAgents(context.Background()); err != nil {
		t.Fatalf("LoadAgents as the app role: %v", err)
	}
}

// The app role is refused DDL and the DML the store does not use.
func TestAppRoleIsRefusedDDL(t *testing.T) {
	t.Parallel()
	pool := appRolePool(t)
	for _, stmt := range []string{
		`CREATE TABLE intruder (a int)`,
		`DROP TABLE items`,
		`ALTER TABLE threads ADD COLUMN x int`,
		`CREATE INDEX intruder_idx ON threads (version)`,
		`DELETE FROM items`,
		`TRUNCATE threads`,
		`SELECT * FROM schema_migrations`,
		`INSERT INTO agent_versions VALUES ('a', 'h', '{}', 0)`,
	} {
		_, err := pool.Exec(context.Background(), stmt)
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != "42501" {
			t.Errorf("%s: %v, want permission denied (42501)", stmt, err)
		}
	}
}
