package disk

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// errClosed is returned for writes submitted after Close.
var errClosed = errors.New("disk: database closed")

// wreq is one write: fn runs inside the group's transaction (in a SAVEPOINT
// of its own when atomic, so that its failure undoes only its own
// statements); after runs once the transaction is durable, if fn succeeded.
type wreq struct {
	fn     func(c *wconn) error
	after  func()
	atomic bool
	// lazy writes commit in a group of their own, without an fsync
	// (synchronous=NORMAL): after a crash of the process they are there,
	// after a power failure they may be rolled back. The caller makes them
	// durable later (DB.syncWAL); checkpoints can, because the journal
	// segments they copy stay until then.
	lazy bool
	done chan error
}

// wconn is the write connection as the ops see it.
type wconn struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	// checkpoint asks for a WAL checkpoint after the group commits.
	checkpoint bool
}

func (c *wconn) stmt(query string) (*sql.Stmt, error) {
	if st := c.stmts[query]; st != nil {
		return st, nil
	}
	st, err := c.conn.PrepareContext(context.Background(), query)
	if err != nil {
		return nil, fmt.Errorf("preparing %q: %w", query, err)
	}
	c.stmts[query] = st
	return st, nil
}

// exec runs a prepared statement and returns the rows it affected.
func (c *wconn) exec(query string, args ...any) (int64, error) {
	st, err := c.stmt(query)
	if err != nil {
		return 0, err
	}
	res, err := st.Exec(args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c *wconn) queryRow(query string, args ...any) *sql.Row {
	st, err := c.stmt(query)
	if err != nil {
		return c.conn.QueryRowContext(context.Background(), query, args...)
	}
	return st.QueryRow(args...)
}

// writer owns the write connection and commits waiting writes in groups:
// one transaction, one fsync, for everything that queued up meanwhile.
type writer struct {
	db   *sql.DB
	max  int
	log  *slog.Logger
	ch   chan *wreq
	quit chan struct{}
	wg   sync.WaitGroup

	mu     sync.RWMutex
	closed bool

	// noSync: every group already commits without an fsync.
	noSync bool
	// failed, once set (on the writer's goroutine), fails every later group.
	failed error
	// onGroup, when set (tests), is told each group's requests.
	onGroup func([]*wreq)

	// Groups and Writes count transactions and writes (for benchmarks).
	groups, writes int64
}

func newWriter(db *sql.DB, max int, noSync bool, log *slog.Logger) *writer {
	w := &writer{db: db, max: max, noSync: noSync, log: log, ch: make(chan *wreq, max*4), quit: make(chan struct{})}
	w.wg.Add(1)
	go w.loop() // owned by close
	return w
}

// do submits r and waits until it is durable (or failed, or ctx ended: the
// write may then still happen).
func (w *writer) do(ctx context.Context, r *wreq) error {
	r.done = make(chan error, 1)
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return errClosed
	}
	select {
	case w.ch <- r:
	case <-ctx.Done():
		w.mu.RUnlock()
		return ctx.Err()
	}
	w.mu.RUnlock()
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// submit queues r without waiting for it (r.done gets its outcome).
func (w *writer) submit(r *wreq) error {
	r.done = make(chan error, 1)
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return errClosed
	}
	w.ch <- r
	return nil
}

func (w *writer) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	close(w.quit)
	w.mu.Unlock()
	w.wg.Wait()
}

func (w *writer) loop() {
	defer w.wg.Done()
	conn, err := w.db.Conn(context.Background())
	c := &wconn{conn: conn, stmts: map[string]*sql.Stmt{}}
	defer func() {
		for _, st := range c.stmts {
			st.Close()
		}
		if conn != nil {
			conn.Close()
		}
	}()
	batch := make([]*wreq, 0, w.max)
	var held *wreq // the first of the next group (lazy or not, unlike this one)
	for {
		clear(batch) // answered requests must not pin what their closures hold
		batch = batch[:0]
		if held != nil {
			batch, held = append(batch, held), nil
		} else {
			select {
			case r := <-w.ch:
				batch = append(batch, r)
			case <-w.quit:
				// Writes queued before close still run (do never returns
				// errClosed to a write it accepted).
				for {
					select {
					case r := <-w.ch:
						if len(batch) > 0 && r.lazy != batch[0].lazy {
							w.run(c, batch, err)
							clear(batch)
							batch = batch[:0]
						}
						batch = append(batch, r)
						continue
					default:
					}
					break
				}
				if len(batch) > 0 {
					w.run(c, batch, err)
				}
				return
			}
		}
	fill:
		for len(batch) < w.max {
			select {
			case r := <-w.ch:
				if r.lazy != batch[0].lazy {
					held = r
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		w.run(c, batch, err)
	}
}

// run commits one group. connErr is the error of getting the connection.
func (w *writer) run(c *wconn, batch []*wreq, connErr error) {
	errs := make([]error, len(batch))
	fail := func(err error) {
		for i := range errs {
			errs[i] = err
		}
	}
	ctx := context.Background()
	if w.onGroup != nil {
		w.onGroup(batch)
	}
	lazy := batch[0].lazy && !w.noSync
	switch {
	case connErr != nil:
		fail(fmt.Errorf("disk: write connection: %w", connErr))
	case w.failed != nil:
		fail(w.failed)
	default:
		if lazy {
			if _, err := c.conn.ExecContext(ctx, "PRAGMA synchronous=NORMAL"); err != nil {
				fail(fmt.Errorf("disk: a group of lazy writes: %w", err))
				break
			}
			defer func() {
				if _, err := c.conn.ExecContext(ctx, "PRAGMA synchronous=FULL"); err != nil {
					// The next groups would not sync: refuse them instead.
					w.failed = fmt.Errorf("disk: restoring synchronous=FULL on the write connection: %w (nothing is written after this; restart)", err)
					w.log.Error("the database refuses writes from now on", "error", w.failed)
				}
			}()
		}
		if _, err := c.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			fail(fmt.Errorf("disk: beginning a write transaction: %w", err))
			break
		}
		aborted := false
		for i, r := range batch {
			if !r.atomic {
				// A non-atomic op fails cleanly only with a conflict found
				// before it wrote anything; any other failure may have
				// left half of it in the transaction: the whole group is
				// rolled back and every caller gets the error.
				if errs[i] = r.fn(c); errs[i] != nil && !errors.Is(errs[i], runtime.ErrConflict) {
					aborted = true
					_, _ = c.conn.ExecContext(ctx, "ROLLBACK")
					fail(fmt.Errorf("disk: a group of %d writes was rolled back: %w", len(batch), errs[i]))
					break
				}
				continue
			}
			if _, err := c.exec("SAVEPOINT op"); err != nil {
				errs[i] = fmt.Errorf("disk: savepoint: %w", err)
				continue
			}
			if errs[i] = r.fn(c); errs[i] != nil {
				if _, err := c.exec("ROLLBACK TO op"); err != nil {
					errs[i] = errors.Join(errs[i], fmt.Errorf("disk: rolling back to savepoint: %w", err))
				}
			}
			if _, err := c.exec("RELEASE op"); err != nil && errs[i] == nil {
				errs[i] = fmt.Errorf("disk: releasing savepoint: %w", err)
			}
		}
		if aborted {
			break
		}
		if _, err := c.conn.ExecContext(ctx, "COMMIT"); err != nil {
			_, _ = c.conn.ExecContext(ctx, "ROLLBACK")
			fail(fmt.Errorf("disk: committing a group of %d writes: %w", len(batch), err))
		}
	}
	w.groups++
	w.writes += int64(len(batch))
	for i, r := range batch {
		if errs[i] == nil && r.after != nil {
			r.after()
		}
	}
	if c.checkpoint {
		c.checkpoint = false
		if _, err := c.conn.ExecContext(ctx, "PRAGMA incremental_vacuum"); err != nil {
			w.log.Warn("incremental vacuum failed", "error", err)
		}
		if _, err := c.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			w.log.Warn("WAL checkpoint failed", "error", err)
		}
	}
	for i, r := range batch {
		r.done <- errs[i]
	}
}
