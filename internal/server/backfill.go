package server

import (
	"context"
	"time"

	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/retry"
)

// The postgres store's background backfill of migration 5 (dsql.Backfill,
// the same work as `agentslice migrate --backfill`): a thread written
// before it loads whole on every slice until its items record their input.
// serve is the only writer of its database, and it writes every item with
// its input, so the condition dsql.Backfill asks for (every writer runs
// this version) holds as soon as serve starts; it therefore runs the
// backfill itself, in the background, instead of waiting for a person.
//
// It runs in rounds of at most backfillBatches write transactions with
// backfill.pause between them, so that it never holds the pool for long
// against the slices; its progress is the rows it wrote, so a stop (the
// server's, a crash) loses nothing and the next start goes on from there.
// A failed round is logged and tried again after a backoff. It does not
// gate /readyz: a thread not yet backfilled is only slower to load.

// backfillBatches is how many write transactions one round writes.
const backfillBatches = 50

// backfillPauseDefault is backfill.pause's default.
const backfillPauseDefault = time.Second

// backfillMaxWait caps the wait after a failed round.
const backfillMaxWait = 5 * time.Minute

// Backfill configures the postgres store's background backfill of threads
// written before schema version 5 (see docs/longrun.md).
type Backfill struct {
	// Disabled leaves those threads loading whole until `agentslice
	// migrate --backfill` runs (another writer of an older version still
	// writing to the database, say).
	Disabled bool `json:"disabled,omitempty"`
	// Pause is the wait between two rounds of at most 50 write
	// transactions; the wait after a failed round starts at ten times it.
	// Default 1s.
	Pause string `json:"pause,omitempty"`
}

// backfillLoop runs the backfill until no thread is left to backfill or
// the server stops. done, when not nil, is closed when it finishes (tests
// wait on it).
func (s *Server) backfillLoop(ctx context.Context, done chan<- struct{}) {
	defer s.wg.Done()
	if done != nil {
		defer close(done)
	}
	pause := s.set.backfillPause
	wait := retry.Backoff{Base: 10 * pause, Max: max(10*pause, backfillMaxWait), Equal: true}
	var total dsql.BackfillReport
	failures := 0
	start := time.Now()
	for round := 1; ; round++ {
		rep, err := dsql.Backfill(ctx, s.pool, dsql.BackfillOptions{Batches: backfillBatches})
		total.Threads += rep.Threads
		total.Items += rep.Items
		total.Batches += rep.Batches
		if ctx.Err() != nil {
			s.log.Info("backfill stopped with the server; the next start goes on from there",
				"threads", total.Threads, "items", total.Items)
			return
		}
		next := pause
		switch {
		case err != nil:
			failures++
			next = wait.Delay(failures)
			s.log.Error("backfill of threads written before schema version 5 failed; trying again later (they load whole until then)",
				"error", err, "retry_in", next.Round(time.Millisecond), "failures", failures)
		case rep.Done && len(rep.Changing) == 0:
			if total.Threads > 0 || round > 1 {
				s.log.Info("backfill done: threads written before schema version 5 load from their compaction point",
					"threads", total.Threads, "items", total.Items, "transactions", total.Batches,
					"took", time.Since(start).Round(time.Millisecond))
			}
			return
		default:
			failures = 0
			// Done with threads left Changing: they committed while the
			// backfill marked them (the slices of this server); they are
			// still unmarked, and the next round takes them again.
			s.log.Info("backfill in progress", "threads", total.Threads, "items", total.Items,
				"transactions", total.Batches, "changing", len(rep.Changing))
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			s.log.Info("backfill stopped with the server; the next start goes on from there",
				"threads", total.Threads, "items", total.Items)
			return
		case <-t.C:
		}
	}
}

// startBackfill starts backfillLoop on the postgres store unless it is
// turned off; its context ends when Stop begins.
func (s *Server) startBackfill() {
	if s.pool == nil || s.cfg.Backfill.Disabled {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.backfillDone = make(chan struct{})
	s.wg.Add(2)
	go func() { // owned by Stop (closes stopping, waits): ends the backfill's context
		defer s.wg.Done()
		<-s.stopping
		cancel()
	}()
	go s.backfillLoop(ctx, s.backfillDone) // owned by Stop (closes stopping, waits)
}
