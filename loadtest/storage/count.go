package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/runtime"
)

// countingHistory counts the history store calls.
type countingHistory struct {
	runtime.HistoryStore
	loads, commits atomic.Int64
}

func (c *countingHistory) Load(ctx context.Context, id string) (*runtime.Thread, error) {
	c.loads.Add(1)
	return c.HistoryStore.Load(ctx, id)
}

func (c *countingHistory) Commit(ctx context.Context, cm *runtime.Commit) error {
	c.commits.Add(1)
	return c.HistoryStore.Commit(ctx, cm)
}

// countingDedup counts the dedup store calls.
type countingDedup struct {
	runtime.DedupStore
	seen, marks atomic.Int64
}

func (c *countingDedup) Seen(ctx context.Context, thread string, ids []string) ([]bool, error) {
	c.seen.Add(1)
	return c.DedupStore.Seen(ctx, thread, ids)
}

func (c *countingDedup) Mark(ctx context.Context, thread string, ids []string) error {
	c.marks.Add(1)
	return c.DedupStore.Mark(ctx, thread, ids)
}

// tripCounter counts network round trips: on a PostgreSQL connection, one
// starts each time the client writes after it has read (a pipelined batch is
// one); to DynamoDB, each HTTP request is one.
type tripCounter struct {
	pg, ddb atomic.Int64
}

func (t *tripCounter) reset() {
	t.pg.Store(0)
	t.ddb.Store(0)
}

func (t *tripCounter) install(pc *pgxpool.Config) {
	d := &net.Dialer{}
	pc.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &tripConn{Conn: conn, n: &t.pg}, nil
	}
}

type tripConn struct {
	net.Conn
	n       *atomic.Int64
	mu      sync.Mutex
	writing bool
}

func (c *tripConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	if !c.writing {
		c.writing = true
		c.n.Add(1)
	}
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *tripConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.mu.Lock()
		c.writing = false
		c.mu.Unlock()
	}
	return n, err
}

func (t *tripCounter) httpClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: countingTransport{inner: tr, n: &t.ddb}}
}

type countingTransport struct {
	inner http.RoundTripper
	n     *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.inner.RoundTrip(r)
}
