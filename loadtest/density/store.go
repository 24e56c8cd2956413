package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// store is what the benchmark needs of a history store.
type store interface {
	runtime.HistoryStore
	FreezeIdle(idle time.Duration) int
	Stats() local.StoreStats
}

// openedStore is the store of one run, with what it writes to disk.
type openedStore struct {
	store
	inbox local.Inbox
	db    *disk.DB // -store sqlite
	dir   string   // its data directory, removed at close unless -data was given
	keep  bool
}

// openStore opens -store: memory (the in-memory tiers) or sqlite (the
// durable store of serve: every commit and every accepted message durable,
// WAL fsynced per group commit, idle threads dropped from memory and their
// rows merged into one zstd frame).
func openStore(c config) (*openedStore, error) {
	switch c.store {
	case "", "memory":
		return &openedStore{store: local.NewHistoryStore()}, nil
	case "sqlite":
		dir, keep := c.data, c.data != ""
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "density-sqlite-"); err != nil {
				return nil, err
			}
		}
		db, err := disk.Open(context.Background(), dir, disk.Options{})
		if err != nil {
			return nil, err
		}
		return &openedStore{store: db.History(), inbox: db.Inbox(), db: db, dir: dir, keep: keep}, nil
	}
	return nil, fmt.Errorf("-store must be memory or sqlite, got %q", c.store)
}

// diskBytes checkpoints and returns the bytes of the database files and
// of the journal's files (a fixed cost, whatever the number of agents); 0
// for the memory store.
func (o *openedStore) diskBytes() (db, journal int64) {
	if o.db == nil {
		return 0, 0
	}
	if err := o.db.Checkpoint(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "density: checkpoint: %v\n", err)
	}
	return o.db.DiskBytes(), o.db.JournalBytes()
}

func (o *openedStore) close() {
	if o.db == nil {
		return
	}
	o.db.Close()
	if !o.keep {
		os.RemoveAll(o.dir)
	}
}
