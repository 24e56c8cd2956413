package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv"
)

// TestMigrateStoresAgentVersions: each deploy's `migrate -agents` stores
// the current definitions beside history and keeps the earlier ones; a
// slice function whose configuration holds only the new version resolves
// a pinned thread's old one from there (on PostgreSQL, as DSQL speaks it).
func TestMigrateStoresAgentVersions(t *testing.T) {
	dsn := testenv.Need(t, "AGENTSLICE_TEST_PG_DSN")
	ctx := context.Background()
	u := schemaDSN(t, dsn, "cli_versions_")

	dir := t.TempDir()
	doc := filepath.Join(dir, "agents.json")
	deploy := func(instructions, want string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "helper.md"), []byte(instructions), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(doc, []byte(`{"agents": [{"name": "helper", "instructions_file": "helper.md"}]}`), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCmd("migrate", "--dsn", u.String(), "--agents", doc)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("migrate --agents: %d %q %s", code, out, errOut)
		}
	}
	deploy("You are version one.", "agent versions: 1 current, 1 kept in all")
	deploy("You are version one.", "agent versions: 1 current, 1 kept in all") // the same deploy again
	deploy("You are version two.", "agent versions: 1 current, 2 kept in all")

	if err := os.WriteFile(doc, []byte(`{"agents": [{"name": "bad name"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd("migrate", "--dsn", u.String(), "--agents", doc); code == 0 || !strings.Contains(errOut, "agents[0].name") {
		t.Fatalf("a bad agents document: %d %s", code, errOut)
	}

	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	v1 := runtime.Agent{Name: "helper", Instructions: "You are version one."}
	v2 := runtime.Agent{Name: "helper", Instructions: "You are version two."}
	set, err := runtime.NewAgentSet([]runtime.Agent{v2}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.AgentVersion("helper", v1.Hash()); ok {
		t.Fatal("version one resolved before the store was given")
	}
	set.LoadMissingFrom(dsql.New(pool, dsql.Options{}))
	if v, ok := set.AgentVersion("helper", v1.Hash()); !ok || v.Agent.Instructions != v1.Instructions {
		t.Fatalf("version one from the store: %+v %v", v, ok)
	}
}
