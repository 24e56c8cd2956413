package disk

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// kill closes d as SIGKILL would leave it: nothing checkpointed, the journal
// as the last acknowledged write left it.
func kill(t *testing.T, d *DB) {
	t.Helper()
	if err := d.close(false); err != nil {
		t.Fatalf("closing without a checkpoint: %v", err)
	}
}

// openUnmanaged opens dir for a test that closes (or kills) it itself.
func openUnmanaged(t *testing.T, dir string) *DB {
	t.Helper()
	d, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return d
}

func commitN(t *testing.T, h *History, id string, expected int64, texts ...string) {
	t.Helper()
	add := make([]runtime.Item, len(texts))
	for i, s := range texts {
		add[i] = runtime.Item{Kind: runtime.ItemUser, Input: id + "-" + s, Text: s}
	}
	th, err := h.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	c := &runtime.Commit{ThreadID: id, Expected: expected, Append: add,
		State: runtime.ThreadState{Version: expected + 1, Length: len(th.Items) + len(add), Stack: []string{id}}}
	if err := h.Commit(context.Background(), c); err != nil {
		t.Fatalf("commit %s@%d: %v", id, expected, err)
	}
}

func texts(t *testing.T, h *History, id string) string {
	t.Helper()
	th, err := h.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range th.Items {
		out = append(out, it.Text)
	}
	return strings.Join(out, ",")
}

func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range segs {
		out = append(out, filepath.Join(dir, segName(s)))
	}
	return out
}

// TestKilledCommitsAreReplayed: what was acknowledged before a kill is
// there after it, whether or not a checkpoint ran in between, and the
// journal is empty again after the replay.
func TestKilledCommitsAreReplayed(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	commitN(t, d.History(), "a", 0, "a1", "a2")
	commitN(t, d.History(), "b", 0, "b1")
	if n := d.History().FreezeIdle(-1); n != 2 {
		t.Fatalf("FreezeIdle dropped %d threads, want 2", n)
	}
	commitN(t, d.History(), "a", 1, "a3") // read back from the database, then journaled
	commitN(t, d.History(), "c", 0, "c1")
	kill(t, d)

	d = open(t, dir)
	for id, want := range map[string]string{"a": "a1,a2,a3", "b": "b1", "c": "c1"} {
		if got := texts(t, d.History(), id); got != want {
			t.Fatalf("%s after the kill: %q, want %q", id, got, want)
		}
	}
	if ids, _ := d.History().Threads(context.Background()); strings.Join(ids, ",") != "a,b,c" {
		t.Fatalf("threads after the kill: %v", ids)
	}
	if segs := segFiles(t, dir); len(segs) != 1 {
		t.Fatalf("segments after the replay: %v, want only the new one", segs)
	}
}

// TestReplayAfterCheckpointIsIdempotent: a crash after a checkpoint
// committed but before it removed its segments replays records the
// database already has; they change nothing.
func TestReplayAfterCheckpointIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	in := d.Inbox()
	ctx := context.Background()
	if err := in.Put(ctx, []runtime.Message{msg("a", "m1"), msg("a", "m2")}); err != nil {
		t.Fatal(err)
	}
	commitN(t, d.History(), "a", 0, "a1")
	commitN(t, d.History(), "a", 1, "a2")
	if err := in.Done("a", []string{"m1"}); err != nil {
		t.Fatal(err)
	}
	commitN(t, d.History(), "a", 2, "a3") // after Done: the journal has it by now
	saved := map[string][]byte{}
	d.beforeRetire = func() { // the segments as a crash right after the commit leaves them
		for _, f := range segFiles(t, dir) {
			b, _ := os.ReadFile(f)
			saved[f] = b
		}
	}
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	d.beforeRetire = nil
	commitN(t, d.History(), "a", 3, "a4")
	kill(t, d)
	restored := 0
	for f, b := range saved { // the covered segments, as if never retired
		if _, err := os.Stat(f); err == nil {
			continue // the segment that was open then: it has a4 now
		}
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
		restored++
	}
	if restored == 0 {
		t.Fatal("the checkpoint retired no segment")
	}

	d = open(t, dir)
	if got := texts(t, d.History(), "a"); got != "a1,a2,a3,a4" {
		t.Fatalf("after replaying checkpointed records: %q", got)
	}
	pending, err := d.Inbox().Pending(ctx)
	if err != nil || len(pending) != 1 || pending[0].ID != "m2" {
		t.Fatalf("inbox: %+v %v, want m2 only", pending, err)
	}
}

// TestTornTailIsIgnored: a write cut short at the end of the journal (never
// acknowledged) is dropped; everything before it is kept.
func TestTornTailIsIgnored(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	commitN(t, d.History(), "a", 0, "a1")
	commitN(t, d.History(), "a", 1, "a2")
	kill(t, d)
	segs := segFiles(t, dir)
	last := segs[len(segs)-1]
	b, _ := os.ReadFile(last)
	// Half of a copy of the last record: its header promises more bytes
	// than there are.
	if err := os.WriteFile(last, append(b, b[len(b)/2:len(b)/2+12]...), 0o600); err != nil {
		t.Fatal(err)
	}
	d = open(t, dir)
	if got := texts(t, d.History(), "a"); got != "a1,a2" {
		t.Fatalf("after a torn tail: %q", got)
	}
}

// TestDamagedJournalIsRefused: damage before the end of the journal cannot
// be a torn write; Open refuses and changes no file.
func TestDamagedJournalIsRefused(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	commitN(t, d.History(), "a", 0, "a1")
	// A second segment, so that the damaged one is not the last.
	if err := d.j.do(context.Background(), &jreq{cut: func(uint64) {}}); err != nil {
		t.Fatal(err)
	}
	commitN(t, d.History(), "a", 1, "a2")
	kill(t, d)
	segs := segFiles(t, dir)
	if len(segs) != 2 {
		t.Fatalf("segments: %v", segs)
	}
	b, _ := os.ReadFile(segs[0])
	b[len(b)-3] ^= 0xff
	if err := os.WriteFile(segs[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, _ := os.ReadFile(filepath.Join(dir, FileName))
	_, err := Open(context.Background(), dir, Options{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "segment") {
		t.Fatalf("Open: %v, want ErrCorrupt naming the segment", err)
	}
	after, _ := os.ReadFile(segs[0])
	if !bytes.Equal(after, b) {
		t.Fatal("the damaged segment was changed")
	}
	if now, _ := os.ReadFile(filepath.Join(dir, FileName)); !bytes.Equal(now, db) {
		t.Fatal("the database file was changed")
	}
}

// TestInboxSurvivesKill: accepted messages survive a kill in order, the
// consumed ones stay consumed, a retry with the same ID is kept once.
func TestInboxSurvivesKill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	in := d.Inbox()
	for _, m := range []runtime.Message{msg("a", "1"), msg("b", "2")} {
		if err := in.Put(ctx, []runtime.Message{m}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Checkpoint(ctx); err != nil { // 1 and 2 now in the database
		t.Fatal(err)
	}
	for _, m := range []runtime.Message{msg("a", "3"), msg("a", "1"), msg("c", "4")} {
		if err := in.Put(ctx, []runtime.Message{m}); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.Done("b", []string{"2"}); err != nil { // in the database
		t.Fatal(err)
	}
	if err := in.Done("c", []string{"4"}); err != nil { // only in the journal
		t.Fatal(err)
	}
	if err := in.Put(ctx, []runtime.Message{msg("a", "5")}); err != nil { // after both Dones
		t.Fatal(err)
	}
	kill(t, d)
	d = open(t, dir)
	ids := pendingIDs(t, d)
	if strings.Join(ids, " ") != "a/1 a/3 a/5" {
		t.Fatalf("pending after the kill: %v, want a/1 a/3 a/5", ids)
	}
}

// TestSentOnlyIsWrittenBehindInOrder: a SentOnly commit is visible at once
// and reaches the journal before the thread's next commit, so a replay
// never finds a commit whose predecessor is missing.
func TestSentOnlyIsWrittenBehindInOrder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	h := d.History()
	commitN(t, h, "a", 0, "a1")
	sent := &runtime.Commit{ThreadID: "a", Expected: 1, SentOnly: true,
		State: runtime.ThreadState{Version: 2, Length: 1, Stack: []string{"a"}, Tokens: 7}}
	if err := h.Commit(ctx, sent); err != nil {
		t.Fatal(err)
	}
	if th, _ := h.Load(ctx, "a"); th.State.Version != 2 || th.State.Tokens != 7 {
		t.Fatalf("after the SentOnly commit: %+v", th.State)
	}
	commitN(t, h, "a", 2, "a2")
	kill(t, d)
	d = open(t, dir)
	th, err := d.History().Load(ctx, "a")
	if err != nil || th.State.Version != 3 || len(th.Items) != 2 {
		t.Fatalf("after the kill: %+v %v", th, err)
	}
}

// TestJournalFailureStopsWrites: once a write to the journal fails, that
// commit fails and is not applied, every later one fails too (memory may
// be ahead of the files, so nothing is written after), and a restart
// recovers what was acknowledged before.
func TestJournalFailureStopsWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	h := d.History()
	commitN(t, h, "a", 0, "a1")
	// The segment's descriptor now points at /dev/full: its next write
	// fails with ENOSPC, as on a full disk.
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	fd := int(d.j.f.Fd())
	saved, err := syscall.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(saved)
	if err := syscall.Dup3(int(full.Fd()), fd, 0); err != nil {
		t.Fatal(err)
	}
	c := &runtime.Commit{ThreadID: "a", Expected: 1, Append: []runtime.Item{{Kind: runtime.ItemUser, Input: "u2", Text: "a2"}},
		State: runtime.ThreadState{Version: 2, Length: 2, Stack: []string{"a"}}}
	if err := h.Commit(ctx, c); err == nil || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("commit after the failure: %v, want an error saying to restart", err)
	}
	if th, _ := h.Load(ctx, "a"); th.State.Version != 1 {
		t.Fatalf("the failed commit was applied: version %d", th.State.Version)
	}
	// The disk works again, but the journal stays stopped.
	if err := syscall.Dup3(saved, fd, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.Inbox().Put(ctx, []runtime.Message{msg("b", "m1")}); err == nil {
		t.Fatal("an inbox write after the failure succeeded")
	}
	d.close(false)
	d = open(t, dir)
	if got := texts(t, d.History(), "a"); got != "a1" {
		t.Fatalf("after the restart: %q, want what was acknowledged", got)
	}
	commitN(t, d.History(), "a", 1, "a2")
}

// TestReusedSegmentLeftoversAreIgnored: a retired segment's file becomes a
// later segment and is written over; the records of its earlier life that
// follow the new ones, even aligned on record boundaries, are not replayed
// (their CRCs were made with the old segment number).
func TestReusedSegmentLeftoversAreIgnored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	in := d.Inbox()
	put := func(thread string, i int) {
		t.Helper()
		if err := in.Put(ctx, []runtime.Message{msg(thread, fmt.Sprintf("m%02d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		put("a", i)
	}
	// Held open until the comparison, so that if segment 1 were deleted
	// its inode could not be given to the new segment (os.SameFile would
	// then match a fresh file).
	f, err := os.Open(segFiles(t, dir)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Checkpoint(ctx); err != nil { // a/* in the database; segment 1 becomes the spare
		t.Fatal(err)
	}
	ids := make([]string, 50)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%02d", i)
	}
	if err := in.Done("a", ids); err != nil {
		t.Fatal(err)
	}
	if err := d.Checkpoint(ctx); err != nil { // a/* gone; the spare is now segment 3
		t.Fatal(err)
	}
	segs := segFiles(t, dir)
	now, err := os.Stat(segs[len(segs)-1])
	if err != nil || !os.SameFile(first, now) {
		t.Fatalf("the open segment %v is not segment 1's file reused (%v)", segs, err)
	}
	for i := range 10 { // same sizes as a/*: a/m10.. follow, aligned
		put("b", i)
	}
	kill(t, d)
	d = open(t, dir)
	got := pendingIDs(t, d)
	if len(got) != 10 || got[0] != "b/m00" || got[9] != "b/m09" {
		t.Fatalf("inbox after the kill: %v, want b/m00..b/m09 and no leftover of a/*", got)
	}
}

// TestCleanCloseLeavesNoJournal: after Close, the database holds
// everything and no journal file is left; the next Open starts a new one.
func TestCleanCloseLeavesNoJournal(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	commitN(t, d.History(), "a", 0, "a1")
	if err := d.Checkpoint(context.Background()); err != nil { // makes a spare
		t.Fatal(err)
	}
	commitN(t, d.History(), "a", 1, "a2")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if segs := segFiles(t, dir); len(segs) != 0 {
		t.Fatalf("segments after a clean close: %v", segs)
	}
	if _, err := os.Stat(filepath.Join(dir, spareName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the spare is still there (%v)", err)
	}
	d = open(t, dir)
	if got := texts(t, d.History(), "a"); got != "a1,a2" {
		t.Fatalf("after the clean close: %q", got)
	}
}

// TestCheckpointCopiesTheWAL: the write connection leaves the WAL to the
// copier (wal_autocheckpoint=0), which copies it into the database file after
// each checkpoint, so the checkpointed threads reach the database file
// without another commit.
func TestCheckpointCopiesTheWAL(t *testing.T) {
	dir := t.TempDir()
	d := open(t, dir)
	commitN(t, d.History(), "a", 0, "a1", "a2")
	if n := d.History().FreezeIdle(-1); n != 1 {
		t.Fatalf("FreezeIdle dropped %d threads, want 1", n)
	}
	copyDB := func() string {
		d.walMu.Lock() // no copy is half done
		defer d.walMu.Unlock()
		b, err := os.ReadFile(filepath.Join(dir, FileName))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		db, err := sql.Open("sqlite", "file:"+copyDB())
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = db.QueryRow(`SELECT count(*) FROM threads WHERE id = 'a' AND frozen IS NOT NULL`).Scan(&n)
		db.Close()
		if err == nil && n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database file alone still lacks the frozen thread (count %d, %v): the WAL was never copied", n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSegmentsStayUntilTheDatabaseIsSynced: a checkpoint's transaction
// commits without an fsync, so the segments it copied are deleted only once
// the WAL is synced; while syncing fails, they stay (and a restart replays
// them), and the next sync that works deletes them.
func TestSegmentsStayUntilTheDatabaseIsSynced(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	tried := make(chan struct{}, 16)
	d.hist.ckptMu.Lock()
	d.syncFault = func() error {
		tried <- struct{}{}
		return errors.New("injected sync failure")
	}
	d.hist.ckptMu.Unlock()
	commitN(t, d.History(), "a", 0, "a1")
	before := segFiles(t, dir)
	if n := d.History().FreezeIdle(-1); n != 1 {
		t.Fatalf("FreezeIdle dropped %d threads, want 1", n)
	}
	select {
	case <-tried:
	case <-time.After(30 * time.Second):
		t.Fatal("no sync was tried after the checkpoint")
	}
	d.hist.ckptMu.Lock() // the copier's attempt is over
	for _, f := range before {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("segment %s was deleted although the database was never synced: %v", f, err)
		}
	}
	d.syncFault = nil
	d.hist.ckptMu.Unlock()
	commitN(t, d.History(), "b", 0, "b1")
	if err := d.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range before {
		if _, err := os.Stat(f); err == nil {
			t.Fatalf("segment %s is still there after a checkpoint whose sync worked", f)
		}
	}
	kill(t, d)
	d = open(t, dir)
	if got := texts(t, d.History(), "a") + "|" + texts(t, d.History(), "b"); got != "a1|b1" {
		t.Fatalf("after the restart: %q", got)
	}
}

// TestLazyWritesGroupApart: a checkpoint's lazy transaction (no fsync)
// never carries a write that must be durable when it is answered.
func TestLazyWritesGroupApart(t *testing.T) {
	d := open(t, t.TempDir())
	var mu sync.Mutex
	var mixed, groups int
	d.w.onGroup = func(batch []*wreq) {
		mu.Lock()
		defer mu.Unlock()
		groups++
		for _, r := range batch {
			if r.lazy != batch[0].lazy {
				mixed++
			}
		}
	}
	hold := make(chan struct{})
	first := &wreq{fn: func(*wconn) error { <-hold; return nil }}
	if err := d.w.submit(first); err != nil {
		t.Fatal(err)
	}
	var queued []*wreq
	for i := range 20 {
		r := &wreq{lazy: i%2 == 0, fn: func(*wconn) error { return nil }}
		if err := d.w.submit(r); err != nil {
			t.Fatal(err)
		}
		queued = append(queued, r)
	}
	close(hold)
	for _, r := range append(queued, first) {
		if err := <-r.done; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if mixed > 0 || groups < 3 {
		t.Fatalf("%d groups, %d writes in a group of the other kind; want lazy and durable writes apart", groups, mixed)
	}
}

// TestRecordCRCForms: a sealed record checks for its own segment only, and
// a record in the form older journals used (the segment's number before the
// payload) still reads, so a crash left by an older build replays.
func TestRecordCRCForms(t *testing.T) {
	put := func(b []byte) []byte { return append(b, recEnd, 'x', 'y') }
	rec := frame(nil, 3, put)
	seal(rec, 7)
	if _, _, err := unframe(rec, 7); err != nil {
		t.Fatalf("a sealed record: %v", err)
	}
	if _, _, err := unframe(rec, 8); !errors.Is(err, errTorn) {
		t.Fatalf("a record read as another segment's: %v, want errTorn", err)
	}
	old := frame(nil, 3, put)
	binary.LittleEndian.PutUint32(old[4:], oldRecordCRC(7, old[frameHeader:]))
	if _, _, err := unframe(old, 7); err != nil {
		t.Fatalf("a record of an older journal: %v", err)
	}
	if _, _, err := unframe(old, 8); !errors.Is(err, errTorn) {
		t.Fatalf("an older record read as another segment's: %v, want errTorn", err)
	}
	unsealed := frame(nil, 3, put)
	if _, _, err := unframe(unsealed, 7); !errors.Is(err, errTorn) {
		t.Fatalf("a record never sealed: %v, want errTorn", err)
	}
}

// pendingIDs lists the inbox's pending messages as thread/ID, in order.
func pendingIDs(t *testing.T, d *DB) []string {
	t.Helper()
	pending, err := d.Inbox().Pending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range pending {
		ids = append(ids, m.ThreadID+"/"+m.ID)
	}
	return ids
}
