package dsql

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// The backfill of migration 5. A thread written before it has items that
// record no input (items.input NULL) and no threads.inputs_from, and a
// slice's load of it is whole (loadSQL's base is 0: the consumed check
// could not see what the load left out). Backfill decodes those items,
// records their input, and then marks the thread (inputs_from 0, and
// view_start from its state when the column is NULL), after which its
// slices load from the compaction point.
//
// It is idempotent and resumable: the rows it wrote are its progress (an
// item whose input is set is not read again, a marked thread is not
// visited), so a run stopped anywhere, by a crash or by
// BackfillOptions.Batches, is completed by the next. Each transaction
// writes at most BackfillOptions.Items rows and Limits.MaxBytes bytes
// (DSQL: 3,000 row mutations and 10 MiB per transaction), and a read of a
// window of items larger than Limits.MaxLoadBytes is taken again in
// halves.
//
// It must run once every writer runs this version of the store (after the
// new slice function is deployed and the old one's slices are over): an
// older writer appends items that record no input, and a thread it writes
// after its backfill would hide those from the consumed check.

const (
	// backfillThreadsSQL pages through the threads not yet marked, in key
	// order. $1 the last ID of the previous page, $2 the page size.
	backfillThreadsSQL = `SELECT id FROM threads
 WHERE id > $1::text AND (inputs_from IS NULL OR inputs_from > 0)
 ORDER BY id
 LIMIT $2::integer`
	// backfillThreadSQL reads what the backfill needs of a thread row.
	backfillThreadSQL = `SELECT version, length, inputs_from, view_start, format, state FROM threads WHERE id = $1::text`
	// backfillFirstSQL is the first own position before $2 whose item
	// records no input.
	backfillFirstSQL = `SELECT min(pos) FROM items WHERE thread_id = $1::text AND chunk = 0 AND input IS NULL AND pos < $2::bigint`
	// backfillItemsSQL reads the rows of the items at positions [$2, $3).
	backfillItemsSQL = `SELECT pos, chunk, format, body, input IS NULL FROM items
 WHERE thread_id = $1::text AND pos >= $2::bigint AND pos < $3::bigint`
	// backfillInputSQL records one item's input.
	backfillInputSQL = `UPDATE items SET input = $3::text
 WHERE thread_id = $1::text AND pos = $2::bigint AND chunk = 0 AND input IS NULL`
	// backfillMarkSQL marks a thread whose items all record their input,
	// unless it changed since the backfill read it at version $3 (a writer
	// that records no input, one of before migration 5, may have
	// appended; and $2, the view start, is from the state read then).
	backfillMarkSQL = `UPDATE threads SET inputs_from = 0, view_start = COALESCE(view_start, $2::bigint)
 WHERE id = $1::text AND version = $3::bigint`
)

// BackfillOptions tune Backfill. The zero value is right for DSQL.
type BackfillOptions struct {
	// Limits bound each transaction (MaxRows, MaxBytes) and each read
	// (MaxLoadBytes); zero fields take the defaults.
	Limits Limits
	// Items is the most item rows one transaction updates (default 1,000;
	// at most Limits.MaxRows).
	Items int
	// Threads is how many thread IDs one page of the scan reads (default 100).
	Threads int
	// Batches, if positive, stops the run after that many write
	// transactions (Report.Done false); the next run goes on from there.
	Batches int
	Retry   RetryPolicy
	// Progress, if set, is called after each thread is marked.
	Progress func(BackfillReport)
}

// BackfillReport is what a Backfill run did.
type BackfillReport struct {
	// Threads marked, item inputs recorded, write transactions.
	Threads, Items, Batches int
	// Done: no thread is left to backfill (false when Batches stopped it).
	Done bool
	// Changing lists threads that kept changing while the run marked them
	// (an older writer still appending); run it again once it has stopped.
	Changing []string
}

// backfillBeforeMark, when set (tests), runs between recording a thread's
// inputs and marking it: where an older writer may append.
var backfillBeforeMark func(id string)

// errBackfillStopped ends a run at BackfillOptions.Batches.
var errBackfillStopped = errors.New("backfill stopped after its batches")

type backfill struct {
	db   DB
	opts BackfillOptions
	rep  BackfillReport
}

// Backfill records the input of the items of threads written before
// migration 5 and marks those threads, so that their slices load from the
// compaction point (see above). Run it after Migrate, once every writer
// runs this version; run it again after an interruption.
func Backfill(ctx context.Context, db DB, opts BackfillOptions) (BackfillReport, error) {
	opts.Limits = opts.Limits.withDefaults()
	if opts.Items <= 0 {
		opts.Items = 1000
	}
	opts.Items = min(opts.Items, opts.Limits.MaxRows)
	if opts.Threads <= 0 {
		opts.Threads = 100
	}
	opts.Retry = opts.Retry.withDefaults()
	b := &backfill{db: db, opts: opts}
	err := b.run(ctx)
	if errors.Is(err, errBackfillStopped) {
		return b.rep, nil
	}
	if err != nil {
		return b.rep, fmt.Errorf("dsql: backfill: %w", err)
	}
	b.rep.Done = true
	return b.rep, nil
}

func (b *backfill) run(ctx context.Context) error {
	after := ""
	for {
		rows, err := b.db.Query(ctx, backfillThreadsSQL, after, b.opts.Threads)
		if err != nil {
			return fmt.Errorf("listing threads: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("listing threads: %w", err)
		}
		for _, id := range ids {
			if err := b.thread(ctx, id); err != nil {
				return err
			}
		}
		if len(ids) < b.opts.Threads {
			return nil
		}
		after = ids[len(ids)-1]
	}
}

// markTries is how often thread re-reads a thread whose row changed
// between its read and its mark (any commit: the mark needs the version
// it read).
const markTries = 5

// thread backfills one thread and marks it.
func (b *backfill) thread(ctx context.Context, id string) error {
	for range markTries {
		var (
			version, length       int64
			inputsFrom, viewStart *int64
			format                int16
			state                 string
		)
		err := scanOne(ctx, b.db, backfillThreadSQL, []any{id}, &version, &length, &inputsFrom, &viewStart, &format, &state)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err != nil:
			return fmt.Errorf("thread %s: %w", id, err)
		case inputsFrom != nil && *inputsFrom == 0:
			return nil // marked meanwhile
		}
		// Every item that records no input, not only those before
		// inputs_from: an older writer may have appended since.
		if err := b.items(ctx, id, length); err != nil {
			return err
		}
		vs := int64(0)
		if viewStart == nil {
			st, err := decodeState(format, state)
			if err != nil {
				return fmt.Errorf("thread %s: %w", id, err)
			}
			vs = int64(st.ViewStart)
		}
		if err := b.limit(); err != nil {
			return err
		}
		if backfillBeforeMark != nil {
			backfillBeforeMark(id)
		}
		marked := false
		err = b.opts.Retry.run(ctx, id, func() (bool, error) {
			tag, err := b.db.Exec(ctx, backfillMarkSQL, id, vs, version)
			marked = err == nil && tag.RowsAffected() == 1
			return retryable(err)
		})
		if err != nil {
			return fmt.Errorf("marking thread %s: %w", id, err)
		}
		b.rep.Batches++
		if marked {
			b.rep.Threads++
			if b.opts.Progress != nil {
				b.opts.Progress(b.rep)
			}
			return nil
		}
	}
	b.rep.Changing = append(b.rep.Changing, id)
	return nil
}

// limit stops the run once it has written BackfillOptions.Batches
// transactions.
func (b *backfill) limit() error {
	if b.opts.Batches > 0 && b.rep.Batches >= b.opts.Batches {
		return errBackfillStopped
	}
	return nil
}

// itemRead is one row of backfillItemsSQL.
type itemRead struct {
	pos    int64
	chunk  int32
	format int16
	body   []byte
	none   bool // input IS NULL
}

// items records the input of the thread's items before position upTo
// that record none, a window of positions at a time.
func (b *backfill) items(ctx context.Context, id string, upTo int64) error {
	var first *int64
	if err := scanOne(ctx, b.db, backfillFirstSQL, []any{id, upTo}, &first); err != nil {
		return fmt.Errorf("thread %s: %w", id, err)
	}
	if first == nil {
		return nil
	}
	window := int64(b.opts.Items)
	for from := *first; from < upTo; {
		hi := min(upTo, from+window)
		rows, size, err := b.read(ctx, id, from, hi)
		if err != nil {
			return err
		}
		if size > b.opts.Limits.MaxLoadBytes && hi-from > 1 {
			window = max(1, (hi-from)/2) // large items: read fewer at once
			continue
		}
		if err := b.record(ctx, id, rows); err != nil {
			return err
		}
		from = hi
	}
	return nil
}

func (b *backfill) read(ctx context.Context, id string, from, hi int64) ([]itemRead, int, error) {
	rows, err := b.db.Query(ctx, backfillItemsSQL, id, from, hi)
	if err != nil {
		return nil, 0, fmt.Errorf("thread %s: reading items %d-%d: %w", id, from, hi, err)
	}
	defer rows.Close()
	var out []itemRead
	size := 0
	for rows.Next() {
		var r itemRead
		if err := rows.Scan(&r.pos, &r.chunk, &r.format, &r.body, &r.none); err != nil {
			return nil, 0, fmt.Errorf("thread %s: reading items: %w", id, err)
		}
		size += len(r.body) + rowOverhead
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("thread %s: reading items %d-%d: %w", id, from, hi, err)
	}
	slices.SortFunc(out, func(a, b itemRead) int {
		if a.pos != b.pos {
			return int(a.pos - b.pos)
		}
		return int(a.chunk - b.chunk)
	})
	return out, size, nil
}

// record decodes the items of rows (whole items, sorted) that record no
// input and writes their inputs, in transactions within the limits.
func (b *backfill) record(ctx context.Context, id string, rows []itemRead) error {
	type input struct {
		pos   int64
		input string
		size  int
	}
	var todo []input
	var buf []byte
	for i := 0; i < len(rows); {
		r := &rows[i]
		if r.chunk != 0 {
			return fmt.Errorf("thread %s: item %d starts at chunk %d", id, r.pos, r.chunk)
		}
		j := i + 1
		buf = append(buf[:0], r.body...)
		for ; j < len(rows) && rows[j].pos == r.pos; j++ {
			if rows[j].chunk != rows[j-1].chunk+1 {
				return fmt.Errorf("thread %s: item %d: chunk %d follows chunk %d", id, r.pos, rows[j].chunk, rows[j-1].chunk)
			}
			buf = append(buf, rows[j].body...)
		}
		if r.none {
			it, err := decodeItem(r.format, buf)
			if err != nil {
				return fmt.Errorf("thread %s: item %d: %w", id, r.pos, err)
			}
			// An UPDATE rewrites the row: count its body too.
			todo = append(todo, input{pos: r.pos, input: it.Input, size: len(r.body) + len(it.Input) + len(id) + rowOverhead})
		}
		i = j
	}
	for len(todo) > 0 {
		n, bytes := 0, 0
		for n < len(todo) && n < b.opts.Items && (n == 0 || bytes+todo[n].size <= b.opts.Limits.MaxBytes) {
			bytes += todo[n].size
			n++
		}
		if err := b.limit(); err != nil {
			return err
		}
		batch := todo[:n]
		err := b.opts.Retry.run(ctx, id, func() (bool, error) {
			bt := &pgx.Batch{} // one implicit transaction
			for _, in := range batch {
				bt.Queue(backfillInputSQL, id, in.pos, in.input)
			}
			return retryable(b.db.SendBatch(ctx, bt).Close())
		})
		if err != nil {
			return fmt.Errorf("thread %s: recording inputs: %w", id, err)
		}
		b.rep.Batches++
		b.rep.Items += n
		todo = todo[n:]
	}
	return nil
}

// scanOne scans the first row of a query into dest (pgx.ErrNoRows when it
// returns none): DB has no QueryRow.
func scanOne(ctx context.Context, db DB, sql string, args []any, dest ...any) error {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}
