package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/cost"
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

// dsqlMeter is the history store's Meter (internal/dsql): it sums the
// rows and bytes each load read and each commit wrote, and prices each
// transaction with AWS's DSQL metering formulas (internal/cost), so the
// cost model's mean-based DPUs can be checked against per-transaction
// ones.
type dsqlMeter struct {
	mu                                 sync.Mutex
	loads, commits                     int64
	readBytes, wroteRows, wroteBytes   int64
	threadRowBytes, idBytes, bodyBytes int64
	itemRows, itemBytes                int64
	ioDPUs                             float64
	lastThreadRow                      map[string]int
}

func (m *dsqlMeter) Read(thread string, rows []int) {
	n := 0
	for _, r := range rows {
		n += r
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loads++
	m.readBytes += int64(n)
	m.ioDPUs += cost.DSQLReadDPU(float64(n))
}

// Wrote takes rows as internal/dsql lists them: the thread row first, then
// (on a thread's first commit) its threads_parent_idx entry, then the
// items (this driver spawns no children).
func (m *dsqlMeter) Wrote(thread string, rows []int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastThreadRow == nil {
		m.lastThreadRow = map[string]int{}
	}
	_, seen := m.lastThreadRow[thread]
	m.commits++
	m.wroteRows += int64(len(rows))
	for _, r := range rows {
		m.wroteBytes += int64(r)
	}
	m.threadRowBytes += int64(rows[0])
	m.idBytes += int64(len(thread))
	m.lastThreadRow[thread] = rows[0]
	items := rows[1:]
	if !seen {
		items = rows[2:]
	}
	for _, r := range items {
		m.itemRows++
		m.itemBytes += int64(r)
		m.bodyBytes += int64(r - len(thread) - cost.DSQLItemRowFixed)
	}
	// The commit also reads the thread row (its version check).
	m.ioDPUs += cost.DSQLWriteDPU(rows) + cost.DSQLReadDPU(float64(rows[0]))
}

// result is the meter's figures, after checking them against what
// PostgreSQL stores: the item rows (written once each) must count and
// weigh what the meter counted, and the thread rows what their last
// commits wrote. run reads it before verify's loads.
func (m *dsqlMeter) result(ctx context.Context, db *pgxpool.Pool, slices int64, turns int) (DSQLMeasured, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var d DSQLMeasured
	if m.loads == 0 || m.commits == 0 {
		return d, fmt.Errorf("dsql meter: %d loads, %d commits metered", m.loads, m.commits)
	}
	var rows, itemBytes, threadBytes int64
	err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM items),
	 (SELECT coalesce(sum(octet_length(thread_id) + $1 + octet_length(body)), 0) FROM items),
	 (SELECT coalesce(sum(octet_length(id) + octet_length(parent) + $2 + octet_length(state)), 0) FROM threads)`,
		cost.DSQLItemRowFixed, cost.DSQLThreadRowFixed).Scan(&rows, &itemBytes, &threadBytes)
	if err != nil {
		return d, fmt.Errorf("dsql meter: reading the stored rows' sizes: %w", err)
	}
	last := int64(0)
	for _, v := range m.lastThreadRow {
		last += int64(v)
	}
	if rows != m.itemRows || itemBytes != m.itemBytes || threadBytes != last {
		return d, fmt.Errorf("dsql meter disagrees with PostgreSQL: items %d rows %d bytes stored, %d rows %d bytes metered; thread rows %d bytes stored, %d metered",
			rows, itemBytes, m.itemRows, m.itemBytes, threadBytes, last)
	}
	d = DSQLMeasured{DSQLFigures: DSQLFigures{
		ReadBytesPerLoad:     float64(m.readBytes) / float64(m.loads),
		RowsPerCommit:        float64(m.wroteRows) / float64(m.commits),
		WriteBytesPerCommit:  float64(m.wroteBytes) / float64(m.commits),
		ThreadRowBytes:       float64(m.threadRowBytes) / float64(m.commits),
		ThreadIDBytes:        float64(m.idBytes) / float64(m.commits),
		ItemBodyBytesPerTurn: float64(m.bodyBytes) / float64(turns),
		IODPUsPerSlice:       m.ioDPUs / float64(slices),
	}, CheckedItemRows: rows}
	return d, nil
}
