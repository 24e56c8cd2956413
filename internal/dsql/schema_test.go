package dsql

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// forbidden lists what DSQL rejects (see the package doc); every statement
// the package sends is scanned for it.
var forbidden = []struct {
	what string
	re   *regexp.Regexp
}{
	{"foreign key", regexp.MustCompile(`(?i)\bFOREIGN\s+KEY\b|\bREFERENCES\b`)},
	{"trigger", regexp.MustCompile(`(?i)\bTRIGGER\b`)},
	{"temporary table", regexp.MustCompile(`(?i)\bTEMP(ORARY)?\b|\bUNLOGGED\b`)},
	{"TRUNCATE", regexp.MustCompile(`(?i)\bTRUNCATE\b`)},
	{"SAVEPOINT", regexp.MustCompile(`(?i)\bSAVEPOINT\b`)},
	{"extension", regexp.MustCompile(`(?i)\bEXTENSION\b`)},
	{"JSON type", regexp.MustCompile(`(?i)\bJSONB?\b`)},
	{"sequence", regexp.MustCompile(`(?i)\bSEQUENCE\b|\b(SMALL|BIG)?SERIAL\b|\bIDENTITY\b|\bnextval\b`)},
	{"CREATE TABLE AS / INHERITS / PARTITION / COLLATE", regexp.MustCompile(`(?i)\bCREATE\s+TABLE\b[^(]*\bAS\b|\bINHERITS\b|\bPARTITION\b|\bCOLLATE\b`)},
	{"ALTER TABLE constraint change", regexp.MustCompile(`(?i)\bALTER\s+TABLE\b.*\b(ADD|DROP)\s+CONSTRAINT\b`)},
	{"procedural language", regexp.MustCompile(`(?i)\bLANGUAGE\s+plpgsql\b|\bDO\s+\$\$`)},
	{"explicit transaction control", regexp.MustCompile(`(?i)^\s*(BEGIN|COMMIT|ROLLBACK|START\s+TRANSACTION)\b`)},
	{"VACUUM / ALTER SYSTEM", regexp.MustCompile(`(?i)\bVACUUM\b|\bALTER\s+SYSTEM\b`)},
}

var (
	ddlRe        = regexp.MustCompile(`(?i)^\s*(CREATE|ALTER|DROP)\b`)
	createIdxRe  = regexp.MustCompile(`(?i)\bCREATE\s+(UNIQUE\s+)?INDEX\b(\s+ASYNC\b)?`)
	dmlKeywordRe = regexp.MustCompile(`(?i)\b(INSERT|UPDATE|DELETE|SELECT)\b`)
)

func TestDDLIsDSQLCompatible(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{DSQL, Postgres} {
		seen := map[int]bool{}
		for _, m := range migrations {
			if seen[m.version] || m.version <= 0 {
				t.Fatalf("migration version %d is duplicated or not positive", m.version)
			}
			seen[m.version] = true
			for _, stmt := range append(m.ddl(d), createMigrationsSQL) {
				scan(t, string(d)+" migration "+m.name, stmt)
				if !ddlRe.MatchString(stmt) {
					t.Errorf("%s migration %d: %q is not DDL: migrations hold DDL only, one statement per transaction", d, m.version, stmt)
				}
				if dmlKeywordRe.MatchString(stmt) {
					t.Errorf("%s migration %d: DDL mixed with DML in %q", d, m.version, stmt)
				}
				for _, idx := range createIdxRe.FindAllStringSubmatch(stmt, -1) {
					async := idx[2] != ""
					if async != (d == DSQL) {
						t.Errorf("%s migration %d: %q: DSQL needs CREATE INDEX ASYNC, PostgreSQL plain CREATE INDEX", d, m.version, stmt)
					}
				}
			}
		}
	}
}

func TestDMLIsDSQLCompatible(t *testing.T) {
	t.Parallel()
	for name, stmt := range dmlStatements {
		scan(t, name, stmt)
	}
}

func scan(t *testing.T, where, stmt string) {
	t.Helper()
	if strings.Contains(strings.TrimRight(strings.TrimSpace(stmt), ";"), ";") {
		t.Errorf("%s: more than one statement in %q", where, stmt)
	}
	for _, f := range forbidden {
		if loc := f.re.FindStringIndex(stmt); loc != nil {
			t.Errorf("%s: %s (%q) is not accepted by DSQL:\n%s", where, f.what, stmt[loc[0]:loc[1]], stmt)
		}
	}
}

// TestScanCatchesForbidden keeps the scanner honest.
func TestScanCatchesForbidden(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		"CREATE TABLE x (id BIGSERIAL PRIMARY KEY)",
		"CREATE TABLE x (doc JSONB)",
		"CREATE TABLE x (p TEXT REFERENCES threads(id))",
		"CREATE TEMP TABLE x (a INT)",
		"TRUNCATE items",
		"SAVEPOINT s1",
		"CREATE EXTENSION pgcrypto",
		"CREATE TRIGGER t AFTER INSERT ON items EXECUTE FUNCTION f()",
		"CREATE SEQUENCE s",
		"CREATE TABLE x AS SELECT 1",
		"BEGIN",
	} {
		hit := false
		for _, f := range forbidden {
			hit = hit || f.re.MatchString(bad)
		}
		if !hit {
			t.Errorf("scanner misses %q", bad)
		}
	}
	if m := createIdxRe.FindStringSubmatch(createIndex(DSQL, "i", "t", "c")); m == nil || m[2] == "" {
		t.Errorf("DSQL index statement %q is not ASYNC", createIndex(DSQL, "i", "t", "c"))
	}
}

// TestMigrate runs the migrations on a fresh schema, checks what they
// recorded and that running them again changes nothing and sends no DDL.
func TestMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cnt := &counter{}
	pool := newSchemaPool(t, func(pc *pgxpool.Config) { cnt.install(pc) }) // migrated once
	rows, err := pool.Query(ctx, "SELECT version, name FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	type rec struct {
		Version int32
		Name    string
	}
	recs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[rec])
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(migrations) || int(recs[len(recs)-1].Version) != SchemaVersion() {
		t.Fatalf("recorded %+v, want %d migrations up to %d", recs, len(migrations), SchemaVersion())
	}
	var idx int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'threads_parent_idx'").Scan(&idx); err != nil || idx != 1 {
		t.Fatalf("threads_parent_idx: %d %v", idx, err)
	}
	cnt.reset()
	if err := Migrate(ctx, pool, Postgres); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	for _, q := range cnt.sqls {
		if ddlRe.MatchString(q) && q != createMigrationsSQL {
			t.Errorf("second Migrate sent DDL: %q", q)
		}
	}
	if err := Migrate(ctx, pool, "mysql"); err == nil {
		t.Error("Migrate accepted dialect mysql")
	}
}
