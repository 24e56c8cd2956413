package dsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/testenv"
)

// The tests run against a real PostgreSQL (scripts/services/postgres.sh).
// Each test gets a schema of its own, dropped at cleanup, so tests do not
// see each other's threads and can run in parallel.

const dsnVar = "AGENTSLICE_TEST_PG_DSN"

type poolOpt func(*pgxpool.Config)

// repeatableRead runs the pool's transactions at REPEATABLE READ, the
// snapshot isolation DSQL provides: concurrent writers then fail with 40001
// as they do on DSQL (OC000), instead of waiting for row locks.
func repeatableRead(pc *pgxpool.Config) {
	pc.ConnConfig.RuntimeParams["default_transaction_isolation"] = "repeatable read"
}

// newSchemaPool returns a pool whose search_path is a fresh, migrated schema.
func newSchemaPool(t testing.TB, opts ...poolOpt) *pgxpool.Pool {
	t.Helper()
	dsn := testenv.Need(t, dsnVar)
	ctx := context.Background()
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	schema := "t_" + hex.EncodeToString(rnd[:])
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", dsnVar, err)
	}
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema: %v", err)
	}
	admin.Close(ctx)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("cleanup: dropping schema %s: %v", schema, err)
		}
	})
	cfg := Config{Dialect: Postgres, DSN: dsn, PingAfterIdle: -1}
	pc, err := cfg.PoolConfig()
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig.RuntimeParams["search_path"] = schema
	pc.ConnConfig.RuntimeParams["application_name"] = schema
	for _, o := range opts {
		o(pc)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := Migrate(ctx, pool, Postgres); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return pool
}

// counter counts what a pool sends: queries and batches (through pgx's
// tracer hooks) and network round trips (through the connection itself: a
// round trip starts each time the client writes after having read).
type counter struct {
	queries, batches, batchStmts, prepares, trips atomic.Int64
	mu                                            sync.Mutex
	sqls                                          []string
}

func (c *counter) reset() {
	c.queries.Store(0)
	c.batches.Store(0)
	c.batchStmts.Store(0)
	c.prepares.Store(0)
	c.trips.Store(0)
	c.mu.Lock()
	c.sqls = nil
	c.mu.Unlock()
}

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	c.mu.Lock()
	c.sqls = append(c.sqls, d.SQL)
	c.mu.Unlock()
	return ctx
}
func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.batches.Add(1)
	return ctx
}
func (c *counter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.batchStmts.Add(1)
	c.mu.Lock()
	c.sqls = append(c.sqls, d.SQL)
	c.mu.Unlock()
}
func (c *counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
func (c *counter) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	c.prepares.Add(1)
	return ctx
}
func (c *counter) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// countRoundTrips makes the pool trace into c and dial through a
// connection that counts round trips.
func (c *counter) install(pc *pgxpool.Config) {
	pc.ConnConfig.Tracer = c
	d := &net.Dialer{}
	pc.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &tripConn{Conn: conn, c: c}, nil
	}
}

type tripConn struct {
	net.Conn
	c       *counter
	mu      sync.Mutex
	writing bool
}

func (t *tripConn) Write(b []byte) (int, error) {
	t.mu.Lock()
	if !t.writing {
		t.writing = true
		t.c.trips.Add(1)
	}
	t.mu.Unlock()
	return t.Conn.Write(b)
}

func (t *tripConn) Read(b []byte) (int, error) {
	n, err := t.Conn.Read(b)
	if n > 0 {
		t.mu.Lock()
		t.writing = false
		t.mu.Unlock()
	}
	return n, err
}
