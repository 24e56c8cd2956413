package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// The journal is where history commits and inbox changes become durable:
// an append-only sequence of segment files (journal-NNNNNNNN.log) in the
// data directory. One goroutine owns the open segment. Writers hand it
// framed records (encoded on their own goroutines); it appends whatever has
// queued up with one write and one fdatasync (group commit), then applies
// each record to memory (its after function) and answers. A checkpoint
// later copies what the journal holds into the database and retires the
// segments it covered (see checkpoint.go); Open replays what is left.
//
// A retired segment is not deleted but kept as the spare
// (journal-spare.log), and the next cut renames it to the new segment's
// name and writes over it: an fdatasync of blocks already written needs no
// metadata update, about half the time of one that grows the file (0.35
// against 0.73 ms per 80 KB group measured here). See record.go for how a
// reused file's leftovers are told from records.

const (
	segPrefix = "journal-"
	segSuffix = ".log"
	// spareName is the reused file; segments() does not list it.
	spareName = "journal-spare.log"
)

func segName(n uint64) string { return fmt.Sprintf("%s%08d%s", segPrefix, n, segSuffix) }

// segments lists the journal segments in dir, oldest first.
func segments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("disk: listing journal segments in %s: %w", dir, err)
	}
	var out []uint64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, segPrefix) || !strings.HasSuffix(name, segSuffix) {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, segPrefix), segSuffix), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// jreq is one request to the journal: a record to make durable (after runs
// on the journal's goroutine once it is), or a cut: start a new segment,
// then run cut on the journal's goroutine with the number of the segment
// just closed (so cut sees memory exactly as the closed segments leave it).
// fail runs instead of after when the record was not written (also when it
// was never queued).
type jreq struct {
	rec []byte
	// pooled, when set, holds rec's buffer, which goes back to recBufs
	// once the journal has copied it.
	pooled *[]byte
	after  func()
	fail   func()
	cut    func(closed uint64)
	done   chan error
}

type journal struct {
	dir      string
	noSync   bool
	segBytes int64
	segRecs  int
	max      int
	// maxPayload is the largest record payload submit accepts: maxRecord,
	// the bound replay reads a length against (lowered only by tests). A
	// larger record would be synced and acknowledged, then read back as
	// damage by the next Open.
	maxPayload int
	ch         chan *jreq
	quit       chan struct{}
	wg         sync.WaitGroup
	// full is signalled (without blocking) when the open segment has grown
	// past segBytes or segRecs records: a checkpoint should cut it.
	full chan struct{}

	mu     sync.RWMutex
	closed bool

	// Owned by the loop goroutine.
	f    *os.File
	seg  uint64
	size int64
	recs int // records in the open segment
	buf  []byte
	// failed is the write or sync error after which nothing is written
	// again: what is in memory may then be ahead of the files, so the
	// process must restart and recover from them.
	failed error

	groups, writes, bytes atomic.Int64

	// applied gets each synced group (and barriers, see drain); the
	// applier goroutine applies and answers them in order, while the loop
	// goes on to write the next group.
	applied chan appliedGroup
}

// appliedGroup is a written group's requests and its outcome, or a barrier
// (barrier set) that the applier closes once every earlier group is done.
type appliedGroup struct {
	reqs    []*jreq
	err     error
	barrier chan struct{}
}

func openJournal(dir string, first uint64, segBytes int64, segRecs, max int, noSync bool) (*journal, error) {
	j := &journal{dir: dir, noSync: noSync, segBytes: segBytes, segRecs: segRecs, max: max, maxPayload: maxRecord,
		ch: make(chan *jreq, max*4), quit: make(chan struct{}), full: make(chan struct{}, 1)}
	f, err := j.create(first)
	if err != nil {
		return nil, err
	}
	j.f, j.seg = f, first
	j.applied = make(chan appliedGroup, 4)
	j.wg.Add(2)
	go j.loop()  // owned by close
	go j.apply() // owned by close (the loop closes j.applied last)
	return j, nil
}

// apply applies and answers each written group, in order: a group's
// records are durable (or failed) before it gets here, and memory reflects
// every group before the next one's records are applied.
func (j *journal) apply() {
	defer j.wg.Done()
	for g := range j.applied {
		if g.barrier != nil {
			close(g.barrier)
			continue
		}
		for _, r := range g.reqs {
			switch {
			case g.err == nil && r.after != nil:
				r.after()
			case g.err != nil && r.fail != nil:
				r.fail()
			}
			if r.done != nil {
				r.done <- g.err
			}
		}
	}
}

// drain waits until every group written so far is applied (memory then
// reflects exactly what the journal holds: a cut needs that).
func (j *journal) drain() {
	b := make(chan struct{})
	j.applied <- appliedGroup{barrier: b}
	<-b
}

// create makes segment n, from the spare when there is one, and makes its
// directory entry durable.
func (j *journal) create(n uint64) (*os.File, error) {
	path := filepath.Join(j.dir, segName(n))
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if err := os.Rename(filepath.Join(j.dir, spareName), path); err == nil {
		flags = os.O_WRONLY
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("disk: reusing the spare journal segment as %s: %w", path, err)
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("disk: creating journal segment %s: %w", path, err)
	}
	if !j.noSync {
		if err := syncDir(j.dir); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("disk: opening %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("disk: syncing directory %s: %w", dir, err)
	}
	return nil
}

// do queues r and waits until it is durable and applied (or failed, or ctx
// ended: it may then still happen).
func (j *journal) do(ctx context.Context, r *jreq) error {
	r.done = make(chan error, 1)
	if err := j.submit(ctx, r); err != nil {
		if r.fail != nil {
			r.fail()
		}
		return err
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// submit queues r; r.done, if set, gets its outcome. A record over
// maxPayload is refused with ErrRecordTooLarge, and nothing is queued.
func (j *journal) submit(ctx context.Context, r *jreq) error {
	if n := len(r.rec) - frameHeader; n > j.maxPayload {
		return fmt.Errorf("%w: %d bytes, the limit is %d; nothing was written", ErrRecordTooLarge, n, j.maxPayload)
	}
	j.mu.RLock()
	defer j.mu.RUnlock()
	if j.closed {
		return errClosed
	}
	select {
	case j.ch <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops the loop after the queued requests and closes the segment.
// Safe to call twice.
func (j *journal) close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	close(j.quit)
	j.mu.Unlock()
	j.wg.Wait()
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("disk: closing journal segment %d: %w", j.seg, err)
	}
	return nil
}

func (j *journal) loop() {
	defer j.wg.Done()
	defer close(j.applied) // after the last group: the applier then ends
	batch := make([]*jreq, 0, j.max)
	var held *jreq // a cut that ended the previous batch
	for {
		clear(batch) // answered requests must not pin what they carried
		batch = batch[:0]
		if held != nil {
			j.runCut(held)
			held = nil
		}
		select {
		case r := <-j.ch:
			batch = append(batch, r)
		case <-j.quit:
			for {
				select {
				case r := <-j.ch:
					if r.cut != nil {
						j.write(batch)
						batch = batch[:0]
						j.runCut(r)
						continue
					}
					batch = append(batch, r)
					continue
				default:
				}
				break
			}
			j.write(batch)
			return
		}
		if batch[0].cut != nil {
			held, batch[0], batch = batch[0], nil, batch[:0]
			continue
		}
	fill:
		for len(batch) < j.max {
			select {
			case r := <-j.ch:
				if r.cut != nil {
					held = r
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		j.write(batch)
	}
}

// write appends the batch's records with one write and one sync, then
// applies and answers each.
func (j *journal) write(batch []*jreq) {
	if len(batch) == 0 {
		return
	}
	err := j.failed
	if err == nil {
		j.buf = j.buf[:0]
		for _, r := range batch {
			seal(r.rec, j.seg)
			j.buf = append(j.buf, r.rec...)
		}
		for _, r := range batch {
			if r.pooled != nil {
				*r.pooled = r.rec
				putBuf(r.pooled)
				r.rec, r.pooled = nil, nil
			}
		}
		if _, werr := j.f.WriteAt(j.buf, j.size); werr != nil {
			err = fmt.Errorf("disk: writing to journal segment %d: %w", j.seg, werr)
		} else if !j.noSync {
			if serr := SyncData(j.f); serr != nil {
				err = fmt.Errorf("disk: syncing journal segment %d: %w", j.seg, serr)
			}
		}
		if err != nil {
			j.failed = err
		} else {
			j.size += int64(len(j.buf))
			j.recs += len(batch)
			j.groups.Add(1)
			j.writes.Add(int64(len(batch)))
			j.bytes.Add(int64(len(j.buf)))
		}
		if cap(j.buf) > 4<<20 {
			j.buf = nil // one large group must not pin its buffer
		}
	}
	if err != nil {
		err = fmt.Errorf("%w (nothing is written after this; restart to recover from the files)", err)
	}
	// Applying and answering happen on the applier's goroutine, so that
	// the next group's write and sync start at once.
	j.applied <- appliedGroup{reqs: slices.Clone(batch), err: err}
	if err == nil && (j.size >= j.segBytes || j.recs >= j.segRecs) {
		select {
		case j.full <- struct{}{}:
		default:
		}
	}
}

// runCut ends the segment with a recEnd record, starts a new one and runs
// the cut's function.
func (j *journal) runCut(r *jreq) {
	j.drain()
	if j.failed != nil {
		r.done <- j.failed
		return
	}
	end := frame(nil, 1, func(b []byte) []byte { return append(b, recEnd) })
	seal(end, j.seg)
	if _, err := j.f.WriteAt(end, j.size); err != nil {
		j.failed = fmt.Errorf("disk: ending journal segment %d: %w", j.seg, err)
	} else if !j.noSync {
		if err := SyncData(j.f); err != nil {
			j.failed = fmt.Errorf("disk: syncing journal segment %d: %w", j.seg, err)
		}
	}
	if j.failed != nil {
		r.done <- j.failed
		return
	}
	f, err := j.create(j.seg + 1)
	if err != nil {
		r.done <- err
		return
	}
	old := j.seg
	if err := j.f.Close(); err != nil {
		f.Close()
		os.Remove(f.Name())
		r.done <- fmt.Errorf("disk: closing journal segment %d: %w", old, err)
		return
	}
	j.f, j.seg, j.size, j.recs = f, old+1, 0, 0
	r.cut(old)
	r.done <- nil
}

// SyncData is the journal's sync call: it flushes f's data (and its size)
// to stable storage with fdatasync, retried on EINTR. Exported for tools
// that measure what a group commit waits for on a given disk
// (loadtest/million's fsync probe), so that they time this very call.
func SyncData(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// removeSegments retires segments [.., through], oldest first, so that the
// segments left are always a suffix of the journal: the newest of them
// becomes the spare when there is none, the others are deleted.
func removeSegments(dir string, through uint64) error {
	segs, err := segments(dir)
	if err != nil {
		return err
	}
	var retired []uint64
	for _, n := range segs {
		if n <= through {
			retired = append(retired, n)
		}
	}
	keep := -1
	if _, err := os.Stat(filepath.Join(dir, spareName)); errors.Is(err, os.ErrNotExist) && len(retired) > 0 {
		keep = len(retired) - 1
	}
	for i, n := range retired {
		path := filepath.Join(dir, segName(n))
		if i == keep {
			// Its records are valid for its own number only: as the spare,
			// and later under another number, they are leftovers.
			if err := os.Rename(path, filepath.Join(dir, spareName)); err == nil {
				continue
			}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("disk: removing journal segment %d: %w", n, err)
		}
	}
	return nil
}
