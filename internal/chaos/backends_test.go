package chaos_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/chaos"
	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

// memory is the embedded system's stores: the two-tier memory history and
// the TTL dedup store.
func memory() (chaos.Backend, func(), error) {
	return chaos.Backend{History: local.NewHistoryStore(), Dedup: local.NewDedupStore(time.Hour)}, func() {}, nil
}

// memoryNoDedup is the memory history store alone: no dedup store.
func memoryNoDedup() (chaos.Backend, func(), error) {
	return chaos.Backend{History: local.NewHistoryStore()}, func() {}, nil
}

// realStores returns a backend factory on the production stores: the DSQL
// history store on PostgreSQL (a fresh, migrated schema per run, so every
// run sees the same thread IDs as the reference) and the DynamoDB dedup
// store on DynamoDB Local (one table per test; each run's thread IDs are
// prefixed inside the dedup store only).
func realStores(t *testing.T) chaos.NewBackend {
	t.Helper()
	dsn := testenv.Need(t, "AGENTSLICE_TEST_PG_DSN")
	endpoint := testenv.Need(t, "AGENTSLICE_TEST_DYNAMODB_ENDPOINT")
	ctx := context.Background()
	client := dynamodb.NewFromConfig(awstest.Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	table := awstest.Name(t, "-"+randomHex(4))
	if err := dedup.CreateTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	dd, err := dedup.New(client, dedup.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := dedup.NewLedger(client, table) // the slice function's (AGENTSLICE_TREE_BUDGETS)
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	return func() (chaos.Backend, func(), error) {
		schema := "chaos_" + randomHex(6)
		pool, drop, err := freshSchema(ctx, dsn, schema)
		if err != nil {
			return chaos.Backend{}, nil, err
		}
		prefix := "r" + strconv.FormatInt(runs.Add(1), 10) + "." + schema + "."
		return chaos.Backend{History: dsql.New(pool, dsql.Options{}), Dedup: prefixedDedup{dd, prefix},
			Ledger: prefixedLedger{ledger, prefix}}, drop, nil
	}
}

// freshSchema creates a schema, migrates it and returns a pool whose
// search_path is that schema, and a function that drops it.
func freshSchema(ctx context.Context, dsn, schema string) (*pgxpool.Pool, func(), error) {
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting: %w", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, nil, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	cfg := dsql.Config{Dialect: dsql.Postgres, DSN: dsn, PingAfterIdle: -1}
	pc, err := cfg.PoolConfig()
	if err != nil {
		return nil, nil, err
	}
	pc.ConnConfig.RuntimeParams["search_path"] = schema
	// DSQL runs transactions at snapshot isolation: concurrent writers fail
	// instead of waiting, as here.
	pc.ConnConfig.RuntimeParams["default_transaction_isolation"] = "repeatable read"
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, nil, err
	}
	drop := func() {
		pool.Close()
		c, err := pgx.Connect(context.WithoutCancel(ctx), dsn)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	}
	if err := dsql.Migrate(ctx, pool, dsql.Postgres); err != nil {
		drop()
		return nil, nil, fmt.Errorf("migrating schema %s: %w", schema, err)
	}
	return pool, drop, nil
}

// prefixedLedger keeps the runs' trees sharing one table apart.
type prefixedLedger struct {
	inner  *dedup.Ledger
	prefix string
}

func (p prefixedLedger) Reserve(ctx context.Context, r runtime.Reservation) (bool, error) {
	r.Tree = p.prefix + r.Tree
	return p.inner.Reserve(ctx, r)
}

func (p prefixedLedger) Settle(ctx context.Context, tree, thread, id string, used runtime.Spend) error {
	return p.inner.Settle(ctx, p.prefix+tree, thread, id, used)
}

func (p prefixedLedger) Change(ctx context.Context, tree, id string, c runtime.BudgetChange) ([]string, error) {
	return p.inner.Change(ctx, p.prefix+tree, id, c)
}

func (p prefixedLedger) Account(ctx context.Context, tree string) (runtime.Account, error) {
	return p.inner.Account(ctx, p.prefix+tree)
}

// prefixedDedup keeps the runs sharing one table apart.
type prefixedDedup struct {
	inner  runtime.DedupStore
	prefix string
}

func (p prefixedDedup) Seen(ctx context.Context, thread string, ids []string) ([]bool, error) {
	return p.inner.Seen(ctx, p.prefix+thread, ids)
}

func (p prefixedDedup) Mark(ctx context.Context, thread string, ids []string) error {
	return p.inner.Mark(ctx, p.prefix+thread, ids)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// diskStores returns a backend factory on serve's durable store
// (internal/disk), restarted at every crash: the run's files are copied as
// the crash left them (what the last acknowledged journal write holds; a
// commit written behind may be missing, as after SIGKILL) and reopened, so
// every redelivery after a crash reads what the journal replays, not what
// the old process had in memory. Fsyncs are off: a copy of the files is
// what the page cache holds, which is what a killed process leaves.
// Whether a write the store makes behind (a sent-only commit, the delete
// of a fired timer's row) is in the copy is a race with the store's
// writer, so a disk run is not a pure function of its plan there: a
// restart may re-arm a wake-up that went out already (issue 36). The
// lost-deletes suite (refire_test.go) plays that case at every restart.
func diskStores(t *testing.T) chaos.NewBackend {
	t.Helper()
	return func() (chaos.Backend, func(), error) {
		s := &restartingDisk{}
		if err := s.open(t.TempDir()); err != nil {
			return chaos.Backend{}, nil, err
		}
		return chaos.Backend{History: s, Dedup: s, Timers: s.timers, Ledger: s, Restart: func() error { return s.restart(t) },
			Recover: s.needAttention}, s.close, nil
	}
}

// restartingDisk is the disk store as the engine sees it across restarts.
type restartingDisk struct {
	mu  sync.RWMutex
	db  *disk.DB
	top int // the highest journal segment seen
	// The durable timers (Backend.Timers), on the run's queue and clock;
	// rebuilt and re-armed from their rows at every restart.
	tm    *disk.Timers
	q     runtime.Queue
	clock local.Clock
}

// diskSegmentBytes keeps the disk store's journal segments small: a
// scenario's commits fill several, so runs cut segments, checkpoint them
// and reuse the retired one (journal-spare.log) as the next, and crashes
// land between those steps too (diskJournal counts the runs that did).
const diskSegmentBytes = 2048

// diskJournal counts the disk runs whose journal was cut at least once
// (it reached a second segment) and those cut twice or more (a third: the
// second cut takes the segment the first checkpoint retired, the spare,
// when that checkpoint finished first), and the durable timers the
// restarts re-armed from their rows.
var diskJournal struct{ runs, cut, reused, rearmed atomic.Int64 }

// seeSegments raises s.top to the highest journal segment in its
// directory.
func (s *restartingDisk) seeSegments() {
	entries, _ := os.ReadDir(s.db.Dir())
	for _, e := range entries {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "journal-%d.log", &n); err == nil && n > s.top {
			s.top = n
		}
	}
}

func (s *restartingDisk) open(dir string) error {
	db, err := disk.Open(context.Background(), dir, disk.Options{NoSync: true, SegmentBytes: diskSegmentBytes})
	if err != nil {
		return err
	}
	s.db = db
	return nil
}

// restart copies the files to a new directory and opens them there; the
// old process's store is closed without being used again.
func (s *restartingDisk) restart(t *testing.T) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seeSegments()
	// The files are copied while the store runs, as a kill finds them;
	// a checkpoint may retire a segment between the listing and the copy,
	// and then the copy is taken again.
	var dir string
	var err error
	for range 5 {
		dir = t.TempDir()
		if err = copyFiles(s.db.Dir(), dir); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	if s.tm != nil {
		// The killed process's in-process timers die with it.
		s.tm.Stop()
	}
	s.db.Close()
	if err := s.open(dir); err != nil {
		return err
	}
	if s.tm == nil {
		return nil
	}
	s.tm = s.db.TimersOn(s.q, s.clock)
	n, err := s.tm.Rearm(context.Background())
	if err != nil {
		return err
	}
	diskJournal.rearmed.Add(int64(n.Total()))
	return nil
}

// needAttention is what serve's recovery kicks after a restart
// (server.recoverDurable): the threads with an unsent outbox or an
// undispatched call.
func (s *restartingDisk) needAttention(ctx context.Context) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.History().NeedAttention(ctx)
}

// timers builds the durable timers on the run's queue and clock.
func (s *restartingDisk) timers(q runtime.Queue, c local.Clock) runtime.Timers {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.q, s.clock = q, c
	s.tm = s.db.TimersOn(q, c)
	return diskTimers{s}
}

// diskTimers are the durable timers of whichever process runs now.
type diskTimers struct{ s *restartingDisk }

func (d diskTimers) Schedule(ctx context.Context, tm runtime.Timer) error {
	d.s.mu.RLock()
	defer d.s.mu.RUnlock()
	return d.s.tm.Schedule(ctx, tm)
}

func (d diskTimers) Cancel(ctx context.Context, thread, call string) error {
	d.s.mu.RLock()
	defer d.s.mu.RUnlock()
	return d.s.tm.Cancel(ctx, thread, call)
}

func (s *restartingDisk) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seeSegments()
	if s.tm != nil {
		s.tm.Stop()
	}
	s.db.Close()
	diskJournal.runs.Add(1)
	if s.top >= 2 {
		diskJournal.cut.Add(1)
	}
	if s.top >= 3 {
		diskJournal.reused.Add(1)
	}
}

// copyFiles copies the regular files of src (not its lock) into dst.
func copyFiles(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == disk.LockName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// The disk store's ledger (serve's), reopened with the store at each
// restart.

func (s *restartingDisk) Reserve(ctx context.Context, r runtime.Reservation) (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.Ledger().Reserve(ctx, r)
}

func (s *restartingDisk) Settle(ctx context.Context, tree, thread, id string, used runtime.Spend) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.Ledger().Settle(ctx, tree, thread, id, used)
}

func (s *restartingDisk) Change(ctx context.Context, tree, id string, c runtime.BudgetChange) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.Ledger().Change(ctx, tree, id, c)
}

func (s *restartingDisk) Account(ctx context.Context, tree string) (runtime.Account, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.Ledger().Account(ctx, tree)
}

func (s *restartingDisk) Load(ctx context.Context, id string) (*runtime.Thread, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.History().Load(ctx, id)
}

func (s *restartingDisk) LoadLeased(ctx context.Context, id string) (*runtime.Thread, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.History().LoadLeased(ctx, id)
}

func (s *restartingDisk) Consumed(ctx context.Context, id string, before int, ids []string) ([]bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.History().Consumed(ctx, id, before, ids)
}

func (s *restartingDisk) Release(id string, lease any) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	s.db.History().Release(id, lease) // a lease from before a restart matches nothing
}

func (s *restartingDisk) Commit(ctx context.Context, c *runtime.Commit) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.History().Commit(ctx, c)
}

func (s *restartingDisk) Seen(ctx context.Context, thread string, ids []string) ([]bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.Dedup().Seen(ctx, thread, ids)
}

func (s *restartingDisk) Mark(ctx context.Context, thread string, ids []string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db.Dedup().Mark(ctx, thread, ids)
}
