package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// dbosPeer runs one Node worker (dbos.js) on the DBOS TypeScript SDK with
// its system database in a schema of its own in the local PostgreSQL. The
// PostgreSQL backends serving that worker (found by the application_name
// the worker connects with) count as its processes; the postmaster and
// PostgreSQL's shared background processes do not.
type dbosPeer struct {
	dir, dsn, schema, app string
	worker                *child
	base                  string
	db                    *pgxpool.Pool
	http                  *http.Client
	sdkVer, pgVer         string
	pgSettings            string
}

func (d *dbosPeer) name() string { return "dbos" }

func (d *dbosPeer) start(ctx context.Context, cb *callbacks, workDir string) error {
	if d.dsn == "" {
		return fmt.Errorf("no PostgreSQL: set -pg-dsn or AGENTSLICE_TEST_PG_DSN")
	}
	if _, err := os.Stat(d.dir + "/node_modules/@dbos-inc/dbos-sdk"); err != nil {
		return fmt.Errorf("DBOS SDK missing (%w); run scripts/peers-deps.sh", err)
	}
	d.sdkVer = npmVersion(d.dir, "@dbos-inc/dbos-sdk")
	d.schema = fmt.Sprintf("peers_dbos_%d", os.Getpid())
	d.app = d.schema
	var err error
	if d.db, err = pgxpool.New(ctx, d.dsn); err != nil {
		return err
	}
	if err := d.db.QueryRow(ctx, "select current_setting('server_version'), current_setting('fsync')||'/'||current_setting('synchronous_commit')").Scan(&d.pgVer, &d.pgSettings); err != nil {
		return fmt.Errorf("PostgreSQL at the DSN: %w", err)
	}
	u, err := url.Parse(d.dsn)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("application_name", d.app)
	u.RawQuery = q.Encode()
	port, err := freePort()
	if err != nil {
		return err
	}
	d.base = "http://127.0.0.1:" + strconv.Itoa(port)
	d.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: time.Minute}
	env := []string{"PEERS_HARNESS_URL=" + cb.url, "PORT=" + strconv.Itoa(port),
		"DBOS_SYSTEM_DATABASE_URL=" + u.String(), "DBOS_SCHEMA=" + d.schema}
	if d.worker, err = startChild("dbos-worker", d.dir, workDir, env, "node", "dbos.js"); err != nil {
		return err
	}
	// Ready once its endpoint answers (404 for an unknown route).
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := http.Get(d.base + "/ready")
		if err == nil {
			res.Body.Close()
			break
		}
		select {
		case err := <-d.worker.exit:
			d.worker.exit <- err
			return fmt.Errorf("dbos worker exited (%v): %s", err, d.worker.tail())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dbos worker not ready within a minute: %s", d.worker.tail())
		}
	}
	return nil
}

// backends are the PostgreSQL backends connected with the worker's
// application_name.
func (d *dbosPeer) backends() []int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := d.db.Query(ctx, "select pid from pg_stat_activity where application_name = $1", d.app)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var p int
		if rows.Scan(&p) == nil {
			out = append(out, p)
		}
	}
	return out
}

func (d *dbosPeer) pids() []int {
	return append(withDescendants([]int{d.worker.cmd.Process.Pid}), d.backends()...)
}

func (d *dbosPeer) begin(ctx context.Context, agent string, turns int) error {
	return post(ctx, d.http, d.base+"/start", map[string]any{"agent": agent, "turns": turns})
}

func (d *dbosPeer) user(ctx context.Context, agent string, turn int) error {
	return post(ctx, d.http, d.base+"/send", map[string]any{"id": agent, "topic": "user", "message": map[string]any{"turn": turn}})
}

func (d *dbosPeer) toolResult(ctx context.Context, agent string, turn int, id string) error {
	return post(ctx, d.http, d.base+"/send", map[string]any{"id": id, "topic": "tool", "message": map[string]any{"text": resultText}})
}

// diskBytes is the size of every relation in the worker's schema (tables,
// indexes, TOAST), as PostgreSQL reports it; the WAL is shared and not
// counted.
func (d *dbosPeer) diskBytes(ctx context.Context) (int64, error) {
	var n int64
	err := d.db.QueryRow(ctx, `select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		from pg_class c join pg_namespace n on n.oid = c.relnamespace
		where n.nspname = $1 and c.relkind in ('r', 'm')`, d.schema).Scan(&n)
	return n, err
}

func (d *dbosPeer) settings() map[string]string {
	return map[string]string{
		"dbos_sdk": d.sdkVer, "postgresql": d.pgVer,
		"durability": "every step and message committed to PostgreSQL (DBOS's only mode); this machine's shared PostgreSQL runs fsync/synchronous_commit = " + d.pgSettings + ", which the harness may not change",
		"workers":    "1 Node.js worker process (one event loop), the SDK's default system-database pool",
		"state":      "one workflow per agent, history in the workflow's memory (rebuilt from step checkpoints on recovery), DBOS.recv for user message and tool result, DBOS.send from the worker's HTTP endpoint",
	}
}

func (d *dbosPeer) stop() {
	d.worker.stop()
	if d.db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if d.schema != "" {
			if _, err := d.db.Exec(ctx, "drop schema if exists "+d.schema+" cascade"); err != nil {
				fmt.Fprintln(os.Stderr, "peers: dropping schema", d.schema+":", err)
			}
		}
		d.db.Close()
	}
}
