package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// Stores `serve` can run on (Config.Store).
const (
	// StoreSQLite is the default: everything durable in one SQLite file
	// under the data directory (internal/disk).
	StoreSQLite = "sqlite"
	// StoreMemory keeps everything in memory: a restart loses it all.
	StoreMemory = "memory"
	// StorePostgres keeps history in PostgreSQL through the DSQL store
	// (Config.DSN); accepted messages and timers stay in memory.
	StorePostgres = "postgres"
)

// DataDirEnv, when set, is the default data directory.
const DataDirEnv = "AGENTSLICE_DATA"

// DefaultDataDir is $AGENTSLICE_DATA, else $XDG_DATA_HOME/agentslice, else
// ~/.local/share/agentslice.
func DefaultDataDir(getenv func(string) string) string {
	if d := getenv(DataDirEnv); d != "" {
		return d
	}
	if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "agentslice")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".local", "share", "agentslice")
}

// storeSettings are the resolved store fields of a Config.
type storeSettings struct {
	kind string // StoreSQLite, StoreMemory or StorePostgres
	data string // data directory (sqlite)
	dsn  string // postgres
}

func (c *Config) resolveStore() (storeSettings, error) {
	s := storeSettings{kind: strings.ToLower(c.Store), data: c.Data, dsn: c.DSN}
	if s.kind == "" {
		s.kind = StoreSQLite
		if s.dsn != "" {
			s.kind = StorePostgres
		}
	}
	switch s.kind {
	case StoreSQLite, StoreMemory:
		if s.dsn != "" {
			return s, &ConfigError{Field: "dsn", Reason: fmt.Sprintf("set with store %q; a DSN needs store %q", s.kind, StorePostgres)}
		}
	case StorePostgres:
		if !strings.HasPrefix(s.dsn, "postgres://") && !strings.HasPrefix(s.dsn, "postgresql://") {
			return s, &ConfigError{Field: "dsn", Reason: "store postgres needs a postgres://… connection URL"}
		}
	default:
		return s, &ConfigError{Field: "store", Reason: fmt.Sprintf("unknown store %q (want sqlite, memory or postgres)", c.Store)}
	}
	return s, nil
}

// threadStore is what the server needs of its history store.
type threadStore interface {
	runtime.HistoryStore
	Threads() []string
	Stats() local.StoreStats
	FreezeIdle(idle time.Duration) int
}

// serveTimers are the timers of the sleep tools.
type serveTimers interface {
	runtime.Timers
	setQueue(q runtime.Queue)
	Stop()
}

type memTimers struct{ *local.Timers }

func (t memTimers) setQueue(q runtime.Queue) { t.Queue = q }

// diskTimers are the sqlite store's timers, armed limits.timer_horizon
// ahead (disk.Timers.Horizon): a sleep due later is a row until it comes
// that near, so that sleeping agents hold no timer in memory and a
// restart arms only the timers due soon.
type diskTimers struct{ *disk.Timers }

func (t diskTimers) setQueue(q runtime.Queue) { t.Queue = q }

// diskThreads adapts the disk history to threadStore.
type diskThreads struct {
	*disk.History
	s *Server
}

func (d diskThreads) Threads() []string {
	ids, err := d.History.Threads(context.Background())
	if err != nil {
		d.s.log.Error("listing threads failed", "error", err)
	}
	return ids
}

// pgThreads adapts the DSQL store on PostgreSQL to threadStore.
type pgThreads struct {
	*dsql.Store
	pool *pgxpool.Pool
	s    *Server
}

func (p pgThreads) Threads() []string {
	rows, err := p.pool.Query(context.Background(), `SELECT id FROM threads ORDER BY id`)
	if err != nil {
		p.s.log.Error("listing threads failed", "error", err)
		return nil
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			p.s.log.Error("listing threads failed", "error", err)
			return ids
		}
		ids = append(ids, id)
	}
	return ids
}

func (p pgThreads) Stats() local.StoreStats {
	var st local.StoreStats
	_ = p.pool.QueryRow(context.Background(), `SELECT count(*) FROM threads`).Scan(&st.Threads)
	return st
}

func (p pgThreads) FreezeIdle(time.Duration) int { return 0 }

// openStore opens the configured store and builds the timers.
func (s *Server) openStore(ctx context.Context) error {
	st := s.set.store
	switch st.kind {
	case StoreMemory:
		s.store = local.NewHistoryStore()
		s.timers = memTimers{local.NewTimers(nil)}
		s.agentStore = &local.AgentStore{}
	case StorePostgres:
		pool, err := dsql.NewPool(ctx, dsql.Config{Dialect: dsql.Postgres, DSN: st.dsn})
		if err != nil {
			return fmt.Errorf("server: connecting to PostgreSQL: %w", err)
		}
		s.pool = pool
		if err := dsql.Migrate(ctx, pool, dsql.Postgres); err != nil {
			return fmt.Errorf("server: migrating the PostgreSQL schema: %w", err)
		}
		pg := dsql.New(pool, dsql.Options{})
		s.store = pgThreads{Store: pg, pool: pool, s: s}
		s.timers = memTimers{local.NewTimers(nil)}
		s.agentStore = pg
	default:
		db, err := disk.Open(ctx, s.dataDir(), disk.Options{Logger: s.log, SegmentRecords: s.set.checkpointRecords})
		if err != nil {
			return fmt.Errorf("server: opening the data directory: %w", err)
		}
		s.db = db
		s.store = diskThreads{History: db.History(), s: s}
		timers := db.Timers(nil)
		timers.Horizon = s.set.timerHorizon
		s.timers = diskTimers{timers}
		s.inbox = db.Inbox()
		s.deadStore = db.DeadLetters()
		s.agentStore = db.Agents()
	}
	return nil
}

// dataDir is the sqlite store's data directory.
func (s *Server) dataDir() string {
	if s.set.store.data != "" {
		return s.set.store.data
	}
	return DefaultDataDir(s.opts.Getenv)
}

// closeStore closes what openStore opened (after the system and timers
// stopped).
func (s *Server) closeStore() {
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			s.log.Warn("closing the data directory", "error", err)
		}
	}
	if s.pool != nil {
		s.pool.Close()
	}
}

// callbackKeyFile holds the generated callback key of a data directory,
// so that callback URLs handed out survive a restart.
const callbackKeyFile = "callback.key"

// persistentKey returns the data directory's generated callback key,
// creating it on first use. ok is false for stores without a directory.
func (s *Server) persistentKey() (key rap.Key, ok bool, err error) {
	if s.set.store.kind != StoreSQLite {
		return key, false, nil
	}
	dir := s.dataDir()
	path := filepath.Join(dir, callbackKeyFile)
	if b, err := os.ReadFile(path); err == nil {
		secret, derr := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if derr != nil || len(secret) < rap.MinKeyLen {
			return key, false, fmt.Errorf("server: %s is not a base64 key of at least %d bytes (delete it to make a new one)", path, rap.MinKeyLen)
		}
		return rap.Key{ID: "local", Secret: secret}, true, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return key, false, fmt.Errorf("server: reading %s: %w", path, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return key, false, fmt.Errorf("server: creating data directory %s: %w", dir, err)
	}
	secret := make([]byte, rap.MinKeyLen)
	_, _ = rand.Read(secret) // never fails (crypto/rand)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(base64.StdEncoding.EncodeToString(secret)+"\n"), 0o600); err != nil {
		return key, false, fmt.Errorf("server: writing %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return key, false, fmt.Errorf("server: writing %s: %w", path, err)
	}
	return rap.Key{ID: "local", Secret: secret}, true, nil
}
