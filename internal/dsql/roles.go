package dsql

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// AppRole is the database role the slice function connects as: on DSQL
// with IAM auth (dsql:DbConnect, not dsql:DbConnectAdmin), mapped to the
// function's IAM role by GrantAppRole. It may run the store's DML and
// nothing else: no DDL, no other tables.
const AppRole = "agentslice_app"

// appGrants is exactly the DML the store runs (queries.go), table by
// table. A test runs the whole history-store conformance suite as a role
// with only these privileges.
var appGrants = []grant{
	{"threads", "SELECT, INSERT, UPDATE"},
	{"items", "SELECT, INSERT"},
	{"thread_ancestors", "SELECT, INSERT"},
	// Read only: the deploy (agentslice migrate -agents, as admin) stores
	// the definitions; a slice resolves a pinned thread's version.
	{"agent_versions", "SELECT"},
}

// ReaderRole is the database role the callback receiver connects as, to
// look up the priority class of a thread whose callback URL does not carry
// it (Store.ThreadClass). It may read the thread rows and nothing else.
const ReaderRole = "agentslice_reader"

// readerGrants is exactly what Store.ThreadClass reads.
var readerGrants = []grant{
	{"threads", "SELECT"},
}

// grant is one GRANT of a role's: privileges on a table.
type grant struct{ table, privileges string }

var roleName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// GrantAppRole creates role (with LOGIN, if it does not exist), grants it
// USAGE on the current schema and exactly the store's DML on its tables
// and, on DSQL only, lets the IAM principal iamARN connect as it (AWS IAM
// GRANT, a DSQL statement PostgreSQL does not have; iamARN is then
// required, and ignored on PostgreSQL). Every statement runs alone (DSQL
// allows one DDL statement per transaction); running it again is harmless.
// Run it after Migrate, as the schema's owner (admin on DSQL).
func GrantAppRole(ctx context.Context, db DB, dialect Dialect, role, iamARN string) error {
	return grantRole(ctx, db, dialect, role, iamARN, appGrants)
}

// GrantReaderRole is GrantAppRole for the callback receiver's role
// (ReaderRole): SELECT on the thread rows only; iamARN is the receiver's
// IAM role (stack output ReceiverRoleArn).
func GrantReaderRole(ctx context.Context, db DB, dialect Dialect, role, iamARN string) error {
	return grantRole(ctx, db, dialect, role, iamARN, readerGrants)
}

func grantRole(ctx context.Context, db DB, dialect Dialect, role, iamARN string, grants []grant) error {
	if !dialect.Valid() {
		return &ConfigError{Field: "Dialect", Reason: fmt.Sprintf("%q is unknown: use %q or %q", dialect, DSQL, Postgres)}
	}
	if !roleName.MatchString(role) || role == "admin" {
		return &ConfigError{Field: "role", Reason: fmt.Sprintf("%q is not a plain lower-case role name other than admin", role)}
	}
	if dialect == DSQL && (!strings.HasPrefix(iamARN, "arn:") || !strings.Contains(iamARN, ":iam::")) {
		return &ConfigError{Field: "iamARN", Reason: fmt.Sprintf("%q is not an IAM role or user ARN (the slice function's role: stack output SliceRoleArn)", iamARN)}
	}
	var schema string
	if err := collectOne(ctx, db, `SELECT current_schema()`, &schema); err != nil {
		return fmt.Errorf("dsql: granting %s: reading the current schema: %w", role, err)
	}
	var exists bool
	if err := collectOne(ctx, db, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, &exists, role); err != nil {
		return fmt.Errorf("dsql: granting %s: looking the role up: %w", role, err)
	}
	mapped := false
	if dialect == DSQL {
		if err := collectOne(ctx, db, `SELECT EXISTS (SELECT 1 FROM sys.iam_pg_role_mappings WHERE pg_role_name = $1 AND arn = $2)`,
			&mapped, role, iamARN); err != nil {
			return fmt.Errorf("dsql: granting %s: reading sys.iam_pg_role_mappings: %w", role, err)
		}
	}
	for _, stmt := range grantStatements(dialect, schema, role, iamARN, exists, mapped, grants) {
		if err := execDDL(ctx, db, dialect, RetryPolicy{}, stmt); err != nil {
			return fmt.Errorf("dsql: granting %s: %s: %w", role, stmt, err)
		}
	}
	return nil
}

// grantStatements lists what grantRole runs.
func grantStatements(dialect Dialect, schema, role, iamARN string, exists, mapped bool, grants []grant) []string {
	r := pgx.Identifier{role}.Sanitize()
	var out []string
	if !exists {
		out = append(out, "CREATE ROLE "+r+" WITH LOGIN")
	}
	out = append(out, "GRANT USAGE ON SCHEMA "+pgx.Identifier{schema}.Sanitize()+" TO "+r)
	for _, g := range grants {
		out = append(out, "GRANT "+g.privileges+" ON "+g.table+" TO "+r)
	}
	if dialect == DSQL && !mapped {
		out = append(out, "AWS IAM GRANT "+r+" TO '"+strings.ReplaceAll(iamARN, "'", "''")+"'")
	}
	return out
}

func collectOne[T any](ctx context.Context, db DB, sql string, dst *T, args ...any) error {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	v, err := pgx.CollectOneRow(rows, pgx.RowTo[T])
	if err != nil {
		return err
	}
	*dst = v
	return nil
}
