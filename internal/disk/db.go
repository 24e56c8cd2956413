package disk

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/agentslice/agentslice/internal/runtime"
)

// DefaultSegmentRecords is Options.SegmentRecords's default.
const DefaultSegmentRecords = 25000

// FileName is the database file inside the data directory.
const FileName = "agentslice.db"

// LockName is the lock file inside the data directory.
const LockName = "LOCK"

// Options configure Open. The zero value is usable.
type Options struct {
	// MaxGroup bounds how many writes one transaction carries. Default 512.
	MaxGroup int
	// Readers is the number of read connections. Default 4.
	Readers int
	// DedupTTL is how long a processed message ID is remembered. Default 24h.
	DedupTTL time.Duration
	// NoSync turns off every fsync (the journal's, and SQLite's
	// synchronous=FULL becomes OFF): for tests that kill nothing and
	// benchmarks that say so.
	NoSync bool
	// SegmentBytes is the journal size past which a checkpoint copies it
	// into the database. Default 64 MiB.
	SegmentBytes int64
	// SegmentRecords is the number of journal records past which a
	// checkpoint copies it into the database, whichever of it and
	// SegmentBytes comes first. It bounds the time Open takes after a
	// crash: Open replays every record left since the last checkpoint
	// (the open segment and the one a checkpoint was copying, so up to
	// about twice this many), one at a time, and a record's bytes say
	// little about its cost (a slice's commit is 300-400 bytes, 64 MiB
	// of them took 19 s to replay on a loaded machine). Default 25,000.
	SegmentRecords int
	Logger         *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// WithDefaults fills in the defaults.
func (o Options) WithDefaults() Options {
	if o.MaxGroup <= 0 {
		o.MaxGroup = 512
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 64 << 20
	}
	if o.SegmentRecords <= 0 {
		o.SegmentRecords = DefaultSegmentRecords
	}
	if o.DedupTTL <= 0 {
		o.DedupTTL = 24 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// DB is an open data directory: the database, its lock and its writer.
// Its stores (History, Dedup, Inbox, Timers) share it. Close it when done.
type DB struct {
	dir  string
	opts Options
	lock *os.File
	rdb  *sql.DB // read connections
	wdb  *sql.DB // the one write connection
	w    *writer // group commit to the database
	// ledger is the tree budgets' ledger, made by the first Ledger call.
	ledgerOnce sync.Once
	ledger     *Ledger
	j          *journal // group commit to the journal
	inbox      *inboxState
	hist       *History // built by Open
	// stopFill cancels the thread filter's fill (Open starts it).
	stopFill context.CancelFunc
	// qThread reads one thread's row (History.read).
	qThread *sql.Stmt
	// ids holds every thread ID the database has (and maybe others).
	ids *idFilter
	// beforeRetire, when set (tests), runs after a checkpoint committed,
	// before it retires the segments it covered: where a crash leaves them.
	beforeRetire func()
	// syncFault, when set (tests), replaces syncWAL's fdatasync.
	syncFault func() error
	// walDB is the connection that copies the WAL into the database file
	// (copyWAL); walDue asks the background goroutine for a copy.
	walDB  *sql.DB
	walMu  sync.Mutex
	walDue chan struct{}
	// The background goroutine: checkpoints when the journal is full, WAL copies.
	quit chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	shut bool
}

// ErrLocked is returned by Open when another process holds the directory.
var ErrLocked = errors.New("disk: data directory is in use by another process")

// ErrNewerVersion is returned by Open for a database written by a newer
// agentslice.
var ErrNewerVersion = errors.New("disk: database written by a newer agentslice")

// ErrNotOurs is returned by Open for a file that is not an agentslice
// database (corrupt, or something else).
var ErrNotOurs = errors.New("disk: not an agentslice database")

// ErrRecordTooLarge is returned by a commit or an inbox write whose journal
// record is over the 1 GiB a record may hold: it is refused whole, before
// anything is written, and the thread or inbox stays as it was. Such a
// record, written, would read back as damage at the next Open.
var ErrRecordTooLarge = errors.New("disk: journal record too large")

// Open opens (creating if needed) the data directory dir, takes its lock,
// and brings the schema up to date. Nothing is written to a file that is
// not an agentslice database or comes from a newer version.
func Open(ctx context.Context, dir string, opts Options) (*DB, error) {
	opts = opts.WithDefaults()
	if dir == "" {
		return nil, errors.New("disk: no data directory given")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("disk: creating data directory %s: %w", dir, err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	d := &DB{dir: dir, opts: opts, lock: lock, quit: make(chan struct{}), walDue: make(chan struct{}, 1)}
	if err := d.open(ctx); err != nil {
		d.closeFiles()
		return nil, err
	}
	last, n, err := replay(ctx, d.wdb, dir)
	if err != nil {
		d.closeFiles()
		return nil, err
	}
	if n > 0 {
		opts.Logger.Info("replayed the journal", "dir", dir, "records", n)
	}
	if last > 0 {
		if err := removeSegments(dir, last); err != nil {
			d.closeFiles()
			return nil, err
		}
	}
	d.ids = newIDFilter(0)
	d.ids.filling, d.ids.filled = true, make(chan struct{}) // filled below, on a goroutine of its own
	roots, err := d.countRoots(ctx)
	if err != nil {
		d.closeFiles()
		return nil, err
	}
	stored, err := d.inboxKeys(ctx)
	if err != nil {
		d.closeFiles()
		return nil, err
	}
	if d.j, err = openJournal(dir, last+1, opts.SegmentBytes, opts.SegmentRecords, opts.MaxGroup, opts.NoSync); err != nil {
		d.closeFiles()
		return nil, err
	}
	d.inbox = newInboxState(stored)
	d.w = newWriter(d.wdb, opts.MaxGroup, opts.NoSync, opts.Logger)
	d.hist = newHistory(d)
	d.hist.roots.Store(roots)
	d.wg.Add(2)
	go d.background() // owned by Close
	fctx, cancel := context.WithCancel(context.Background())
	d.stopFill = cancel
	go func() { // owned by Close, which cancels it
		defer d.wg.Done()
		defer cancel()
		d.ids.fill(fctx, d, d.hist)
	}()
	return d, nil
}

// inboxKeys reads which messages the database's inbox holds.
func (d *DB) inboxKeys(ctx context.Context) (map[inboxKey]struct{}, error) {
	rows, err := d.rdb.QueryContext(ctx, `SELECT thread, id FROM inbox`)
	if err != nil {
		return nil, fmt.Errorf("disk: reading the inbox: %w", err)
	}
	defer rows.Close()
	keys := map[inboxKey]struct{}{}
	for rows.Next() {
		var k inboxKey
		if err := rows.Scan(&k.thread, &k.id); err != nil {
			return nil, fmt.Errorf("disk: reading the inbox: %w", err)
		}
		keys[k] = struct{}{}
	}
	return keys, rows.Err()
}

// WAL copies. SQLite appends a transaction's pages to the WAL file and copies
// them into the database file later (a WAL checkpoint). By default the
// committing connection does that copy at commit once the WAL holds 1,000
// pages, inside the commit: a checkpoint's transaction of 500 frozen threads
// (11 MB) took about 105 ms to commit with the copy and 53 ms without. The
// write connection turns that off (wal_autocheckpoint=0), and a connection
// of its own copies the WAL on the background goroutine after each
// checkpoint (History.checkpoint asks, walDue), first syncing the WAL and
// retiring the journal segments the checkpoint covered (History.retire). A
// PASSIVE copy never blocks writers or readers; what it cannot copy yet (a
// reader still uses it) waits for the next. The copy syncs the database
// file before SQLite reuses the WAL.

// background checkpoints each time the journal passes Options.SegmentBytes
// or Options.SegmentRecords,
// and copies the WAL each time a checkpoint asks.
func (d *DB) background() {
	defer d.wg.Done()
	for {
		select {
		case <-d.quit:
			return
		case <-d.j.full:
			if _, err := d.hist.checkpoint(context.Background(), false, 0); err != nil {
				d.opts.Logger.Warn("checkpoint failed; the journal keeps what it did not copy", "error", err)
			}
		case <-d.walDue:
			d.hist.retireNow()
			if err := d.copyWAL(context.Background()); err != nil {
				d.opts.Logger.Warn("copying the WAL into the database failed; the next checkpoint tries again", "error", err)
			}
		}
	}
}

// askWALCopy asks the background goroutine for a copy (one pending request is enough).
func (d *DB) askWALCopy() {
	select {
	case d.walDue <- struct{}{}:
	default:
	}
}

// syncWAL makes every committed transaction durable, lazy ones included:
// one fdatasync of the WAL file, where SQLite appends them.
func (d *DB) syncWAL() error {
	if d.syncFault != nil {
		return d.syncFault()
	}
	f, err := os.OpenFile(filepath.Join(d.dir, FileName+"-wal"), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("disk: opening the WAL to sync it: %w", err)
	}
	defer f.Close()
	if err := SyncData(f); err != nil {
		return fmt.Errorf("disk: syncing the WAL: %w", err)
	}
	return nil
}

// copyWAL copies what it can of the WAL into the database file now.
func (d *DB) copyWAL(ctx context.Context) error {
	d.walMu.Lock()
	defer d.walMu.Unlock()
	if _, err := d.walDB.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		return fmt.Errorf("disk: copying the WAL of %s: %w", d.dir, err)
	}
	return nil
}

// lockDir takes an exclusive, non-blocking flock on dir/LOCK and writes the
// holder's pid into it.
func lockDir(dir string) (*os.File, error) { return lockDirWaiting(dir, time.Sleep) }

// lockDirWaiting is lockDir with the pause between tries given.
func lockDirWaiting(dir string, sleep func(time.Duration)) (*os.File, error) {
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("disk: data directory %s is not writable: %w", dir, err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	// The holder may be this very process: an earlier DB on dir closed
	// its lock an instant ago, but a child this process is starting
	// (between fork and exec, before close-on-exec takes effect) still
	// holds a copy of that descriptor, and with it the lock. That copy
	// is gone within moments; another process's lock is not waited for.
	for wait := 5 * time.Millisecond; errors.Is(err, syscall.EWOULDBLOCK) && wait <= 640*time.Millisecond; wait *= 2 {
		if holder, _ := os.ReadFile(path); strings.TrimSpace(string(holder)) != strconv.Itoa(os.Getpid()) {
			break
		}
		sleep(wait)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(holder))
			if pid == "" {
				pid = "unknown"
			}
			return nil, fmt.Errorf("%w: %s is locked by process %s (stop it, or use another -data directory)", ErrLocked, dir, pid)
		}
		return nil, fmt.Errorf("disk: locking data directory %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func (d *DB) dsn(sync bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	if sync {
		if d.opts.NoSync {
			q.Add("_pragma", "synchronous(OFF)")
		} else {
			q.Add("_pragma", "synchronous(FULL)")
		}
		q.Add("_pragma", "wal_autocheckpoint(0)") // see copyWAL
	}
	return "file:" + filepath.Join(d.dir, FileName) + "?" + q.Encode()
}

func (d *DB) open(ctx context.Context) error {
	path := filepath.Join(d.dir, FileName)
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		if err := checkHeader(path); err != nil {
			return err
		}
	}
	var err error
	if d.wdb, err = sql.Open("sqlite", d.dsn(true)); err != nil {
		return fmt.Errorf("disk: opening %s: %w", path, err)
	}
	d.wdb.SetMaxOpenConns(1)
	d.wdb.SetMaxIdleConns(1)
	d.wdb.SetConnMaxLifetime(0)
	if err := migrate(ctx, d.wdb, path); err != nil {
		return err
	}
	if d.rdb, err = sql.Open("sqlite", d.dsn(false)); err != nil {
		return fmt.Errorf("disk: opening %s for reading: %w", path, err)
	}
	if d.walDB, err = sql.Open("sqlite", d.dsn(true)); err != nil {
		return fmt.Errorf("disk: opening %s for WAL copies: %w", path, err)
	}
	d.walDB.SetMaxOpenConns(1)
	d.walDB.SetMaxIdleConns(1)
	d.walDB.SetConnMaxLifetime(0)
	d.rdb.SetMaxOpenConns(d.opts.Readers)
	d.rdb.SetMaxIdleConns(d.opts.Readers)
	if d.qThread, err = d.rdb.PrepareContext(ctx, `SELECT spawn_at, version, length, state, frozen, frozen_len FROM threads WHERE id = ?`); err != nil {
		return fmt.Errorf("disk: preparing the thread query on %s: %w", path, err)
	}
	return nil
}

// checkHeader refuses a file that does not start like an SQLite database,
// before SQLite gets a chance to write anything to it.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("disk: reading %s: %w", path, err)
	}
	defer f.Close()
	hdr := make([]byte, 16)
	if _, err := f.ReadAt(hdr, 0); err != nil || string(hdr) != "SQLite format 3\x00" {
		return fmt.Errorf("%w: %s does not start with an SQLite header (corrupt or another kind of file); it was left as it is", ErrNotOurs, path)
	}
	return nil
}

// Dir returns the data directory.
func (d *DB) Dir() string { return d.dir }

// History returns the history store.
func (d *DB) History() *History { return d.hist }

// Dedup returns a dedup store on this database.
func (d *DB) Dedup() *Dedup { return &Dedup{d: d} }

// Inbox returns the inbox of accepted messages.
func (d *DB) Inbox() *Inbox { return &Inbox{d: d} }

// Close checkpoints (so that the next Open has nothing to replay), stops
// the writers (waiting for writes in flight), closes the files and releases
// the lock. Safe to call twice.
func (d *DB) Close() error {
	return d.close(true)
}

// close is Close; without checkpoint it leaves the journal as a crash
// would (tests).
func (d *DB) close(checkpoint bool) error {
	d.mu.Lock()
	if d.shut {
		d.mu.Unlock()
		return nil
	}
	d.shut = true
	d.mu.Unlock()
	close(d.quit)
	d.stopFill()
	d.wg.Wait()
	var errs []error
	if checkpoint {
		if _, err := d.hist.checkpoint(context.Background(), false, 0); err != nil {
			errs = append(errs, err) // the journal keeps it: the next Open replays it
		}
		d.hist.retireNow()
	}
	errs = append(errs, d.j.close())
	// After close the loop has ended: j.size is the open segment's records.
	if checkpoint && errors.Join(errs...) == nil && d.j.size == 0 {
		// A clean stop leaves no journal: the open segment holds nothing
		// but a reused file's leftovers.
		os.Remove(filepath.Join(d.dir, spareName))
		os.Remove(filepath.Join(d.dir, segName(d.j.seg)))
	}
	d.w.close()
	errs = append(errs, d.closeFiles())
	return errors.Join(errs...)
}

func (d *DB) closeFiles() error {
	var errs []error
	if d.qThread != nil {
		errs = append(errs, d.qThread.Close())
	}
	if d.rdb != nil {
		errs = append(errs, d.rdb.Close())
	}
	if d.walDB != nil {
		errs = append(errs, d.walDB.Close())
	}
	if d.wdb != nil {
		errs = append(errs, d.wdb.Close()) // the last connection: SQLite copies and removes the WAL
	}
	if d.lock != nil {
		errs = append(errs, d.lock.Close()) // releases the flock
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("disk: closing %s: %w", d.dir, err)
	}
	return nil
}

// Backup writes a consistent copy of the database to path (VACUUM INTO)
// while the database is in use: a checkpoint, then a copy of the database
// as that checkpoint left it (commits made meanwhile are in the journal,
// not in the copy). path must not exist.
func (d *DB) Backup(ctx context.Context, path string) error {
	if _, err := d.hist.checkpoint(ctx, false, 0); err != nil {
		return fmt.Errorf("disk: backing up to %s: %w", path, err)
	}
	if _, err := d.rdb.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		return fmt.Errorf("disk: backing up to %s: %w", path, err)
	}
	return nil
}

// DiskBytes is the size of the database's files (database, WAL), once
// what the WAL holds is copied into the database file.
func (d *DB) DiskBytes() int64 {
	if err := d.copyWAL(context.Background()); err != nil {
		d.opts.Logger.Warn("measuring the database's size without copying the WAL", "error", err)
	}
	return d.fileBytes(FileName, FileName+"-wal")
}

// JournalBytes is the size of the journal's files: the segments and the
// spare, whose blocks are reused (up to about two segments of
// Options.SegmentBytes while running, whatever the number of threads;
// nothing after a clean Close).
func (d *DB) JournalBytes() int64 {
	names := []string{spareName}
	if segs, err := segments(d.dir); err == nil {
		for _, s := range segs {
			names = append(names, segName(s))
		}
	}
	return d.fileBytes(names...)
}

func (d *DB) fileBytes(names ...string) int64 {
	var n int64
	for _, name := range names {
		if fi, err := os.Stat(filepath.Join(d.dir, name)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// Checkpoint copies the journal into the database, then the database's
// WAL into its file, and truncates both.
func (d *DB) Checkpoint(ctx context.Context) error {
	if _, err := d.hist.checkpoint(ctx, false, 0); err != nil {
		return err
	}
	d.hist.retireNow()
	return d.w.do(ctx, &wreq{fn: func(c *wconn) error {
		c.checkpoint = true
		return nil
	}})
}

var _ runtime.HistoryStore = (*History)(nil)

// JournalStats counts what the journal wrote since Open.
type JournalStats struct {
	// Syncs is the number of group commits (one write and one fdatasync
	// each); Records the records they carried; Bytes their size.
	Syncs, Records, Bytes int64
}

// JournalStats returns the journal's counters.
func (d *DB) JournalStats() JournalStats {
	return JournalStats{Syncs: d.j.groups.Load(), Records: d.j.writes.Load(), Bytes: d.j.bytes.Load()}
}
