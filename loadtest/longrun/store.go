package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// store is the history store of one run and what it needs at the end.
type store struct {
	history runtime.HistoryStore
	db      *disk.DB      // sqlite
	pool    *pgxpool.Pool // postgres
	dir     string        // sqlite's temporary directory, removed at close
	schema  string        // postgres's schema, dropped at close
	dsn     string
}

func openStore(ctx context.Context, c config) (*store, error) {
	switch c.store {
	case "memory":
		return &store{history: local.NewHistoryStore()}, nil
	case "sqlite":
		dir := c.data
		tmp := ""
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "longrun-"); err != nil {
				return nil, err
			}
			tmp = dir
		}
		db, err := disk.Open(ctx, dir, disk.Options{})
		if err != nil {
			return nil, err
		}
		return &store{history: db.History(), db: db, dir: tmp}, nil
	case "postgres":
		if c.dsn == "" {
			return nil, errors.New("-store postgres needs -dsn (or AGENTSLICE_TEST_PG_DSN)")
		}
		var rnd [6]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, err
		}
		schema := "longrun_" + hex.EncodeToString(rnd[:])
		admin, err := pgx.Connect(ctx, c.dsn)
		if err != nil {
			return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
		}
		_, err = admin.Exec(ctx, "CREATE SCHEMA "+schema)
		admin.Close(ctx)
		if err != nil {
			return nil, err
		}
		st := &store{schema: schema, dsn: c.dsn}
		cfg := dsql.Config{Dialect: dsql.Postgres, DSN: c.dsn, PingAfterIdle: -1}
		pc, err := cfg.PoolConfig()
		if err != nil {
			st.close()
			return nil, err
		}
		pc.ConnConfig.RuntimeParams["search_path"] = schema
		if st.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
			st.close()
			return nil, err
		}
		if err := dsql.Migrate(ctx, st.pool, dsql.Postgres); err != nil {
			st.close()
			return nil, err
		}
		st.history = dsql.New(st.pool, dsql.Options{})
		return st, nil
	}
	return nil, fmt.Errorf("-store must be memory, sqlite or postgres, got %q", c.store)
}

// diskBytes is what the store takes on disk (0 for memory): the database
// files after a checkpoint, or the schema's relations.
func (s *store) diskBytes(ctx context.Context) int64 {
	switch {
	case s.db != nil:
		if err := s.db.Checkpoint(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "longrun: checkpoint:", err)
		}
		return s.db.DiskBytes()
	case s.pool != nil:
		var n int64
		err := s.pool.QueryRow(ctx, `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = $1 AND c.relkind = 'r'`, s.schema).Scan(&n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "longrun: relation sizes:", err)
		}
		return n
	}
	return 0
}

// journalBytes is what the durable store's journal wrote since Open (0
// for the other stores).
func (s *store) journalBytes() int64 {
	if s.db == nil {
		return 0
	}
	return s.db.JournalStats().Bytes
}

func (s *store) close() {
	if s.db != nil {
		s.db.Close()
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.schema != "" {
		ctx := context.Background()
		if c, err := pgx.Connect(ctx, s.dsn); err == nil {
			c.Exec(ctx, "DROP SCHEMA "+s.schema+" CASCADE")
			c.Close(ctx)
		}
	}
}
