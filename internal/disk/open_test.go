package disk

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

var updateFixture = flag.Bool("update-fixture", false, "rewrite testdata/v1/agentslice.db with schema version 1")

func TestSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	open(t, dir)
	_, err := Open(context.Background(), dir, Options{})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "locked by process") {
		t.Fatalf("second Open: %v, want ErrLocked naming the holder", err)
	}
}

func TestReopenAfterClose(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, dir) // the lock was released
}

func TestUnwritableDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), filepath.Join(file, "data"), Options{})
	if err == nil || !strings.Contains(err.Error(), "creating data directory") {
		t.Fatalf("Open under a file: %v", err)
	}
	if os.Geteuid() == 0 {
		return // root writes anywhere: the permission case cannot be shown
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), dir, Options{}); err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("Open of a read-only directory: %v", err)
	}
}

// untouched asserts that Open failed with want and left the file as it was.
func untouched(t *testing.T, dir string, content []byte, want error) {
	t.Helper()
	_, err := Open(context.Background(), dir, Options{})
	if !errors.Is(err, want) {
		t.Fatalf("Open: %v, want %v", err, want)
	}
	got, rerr := os.ReadFile(filepath.Join(dir, FileName))
	if rerr != nil || !bytes.Equal(got, content) {
		t.Fatalf("the file was changed (%v)", rerr)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName+"-wal")); err == nil {
		t.Fatal("a WAL was created beside the refused file")
	}
	open(t, t.TempDir()) // and the lock was released: another directory opens
	if d, err := Open(context.Background(), t.TempDir(), Options{}); err == nil {
		d.Close()
	}
}

func TestCorruptFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	junk := bytes.Repeat([]byte("not a database "), 500)
	if err := os.WriteFile(filepath.Join(dir, FileName), junk, 0o600); err != nil {
		t.Fatal(err)
	}
	untouched(t, dir, junk, ErrNotOurs)
}

func TestNewerVersionIsRefused(t *testing.T) {
	dir := t.TempDir()
	d := open(t, dir)
	// Through the writer, which owns the one write connection.
	if err := d.w.do(context.Background(), &wreq{fn: func(w *wconn) error {
		_, err := w.exec("PRAGMA user_version = 99")
		return err
	}}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	content, _ := os.ReadFile(filepath.Join(dir, FileName))
	_, err := Open(context.Background(), dir, Options{})
	if !errors.Is(err, ErrNewerVersion) || !strings.Contains(err.Error(), "schema version 99") {
		t.Fatalf("Open: %v", err)
	}
	untouched(t, dir, content, ErrNewerVersion)
}

func TestForeignDatabaseIsRefused(t *testing.T) {
	dir := t.TempDir()
	db, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE notes (x TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	content, _ := os.ReadFile(filepath.Join(dir, FileName))
	untouched(t, dir, content, ErrNotOurs)
}

// v1Threads are the threads of the version 1 fixture: one with an unsent
// outbox, one with an undispatched call, one idle.
func v1Threads() map[string]runtime.ThreadState {
	msg := runtime.Message{V: 1, ID: "m1", ThreadID: "t-kid", Kind: runtime.KindUser, Text: "hi"}
	return map[string]runtime.ThreadState{
		"t-outbox":  {Version: 1, Length: 2, Stack: []string{"t-outbox"}, Outbox: []runtime.OutboxEntry{{Message: &msg}}},
		"t-pending": {Version: 1, Length: 2, Stack: []string{"t-pending"}, Pending: &runtime.PendingCall{ID: "c1", Name: "sleep", Args: `{"seconds":1}`}},
		"t-idle":    {Version: 1, Length: 2, Stack: []string{"t-idle"}, Pending: &runtime.PendingCall{ID: "c2", Name: "sleep", Dispatched: true}},
	}
}

func fixtureItems(id string) []runtime.Item {
	return []runtime.Item{{Kind: runtime.ItemUser, Input: id + "-in", Text: "hello " + id}, {Kind: runtime.ItemAssistant, Text: "hi from " + id}}
}

// writeV1Fixture builds the fixture with the version 1 schema and the
// code of this package (the commit path has not changed the rows' format).
func writeV1Fixture(t *testing.T, dir string) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if err := migrateTo(ctx, db, dir, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA journal_mode=DELETE"); err != nil {
		t.Fatal(err)
	}
	for id, st := range v1Threads() {
		state, _ := jsonMarshal(st)
		if _, err := db.Exec(`INSERT INTO threads (id, version, length, state) VALUES (?, ?, ?, ?)`, id, st.Version, st.Length, state); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO items (thread, pos, data) VALUES (?, 0, ?)`, id, appendItems(id, 0, fixtureItems(id))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO inbox (thread, id, body) VALUES ('t-idle', 'u1', '{"v":1,"id":"u1","thread_id":"t-idle","kind":"user","text":"later"}')`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMigrateFromVersion1(t *testing.T) {
	fixture := filepath.Join("testdata", "v1", FileName)
	if *updateFixture {
		os.RemoveAll(filepath.Dir(fixture))
		os.MkdirAll(filepath.Dir(fixture), 0o755)
		writeV1Fixture(t, filepath.Dir(fixture))
	}
	content, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatalf("reading the fixture (regenerate with -update-fixture): %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), content, 0o600); err != nil {
		t.Fatal(err)
	}
	d := open(t, dir)
	var v int
	if err := d.rdb.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion() {
		t.Fatalf("schema version %d (%v), want %d", v, err, SchemaVersion())
	}
	ctx := context.Background()
	att, err := d.History().NeedAttention(ctx)
	if err != nil || !slices.Equal(att, []string{"t-outbox", "t-pending"}) {
		t.Fatalf("threads needing attention after migration: %v %v", att, err)
	}
	for id, st := range v1Threads() {
		th, err := d.History().Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if th.State.Version != st.Version || len(th.Items) != 2 || th.Items[1].Text != "hi from "+id {
			t.Fatalf("%s after migration: %+v", id, th)
		}
	}
	calls, err := d.History().PendingCalls(ctx)
	if err != nil || len(calls) != 1 || calls[0].ThreadID != "t-idle" || calls[0].Call.ID != "c2" {
		t.Fatalf("pending calls after migration: %+v %v", calls, err)
	}
	ids, err := d.History().Threads(ctx)
	if err != nil || len(ids) != 3 {
		t.Fatalf("threads: %v %v", ids, err)
	}
	pending, err := d.Inbox().Pending(ctx)
	if err != nil || len(pending) != 1 || pending[0].ID != "u1" {
		t.Fatalf("inbox after migration: %+v %v", pending, err)
	}
}

func TestMigrateFromEmpty(t *testing.T) {
	dir := t.TempDir()
	d := open(t, dir)
	var v int
	if err := d.rdb.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion() {
		t.Fatalf("schema version %d (%v), want %d", v, err, SchemaVersion())
	}
	var mode string
	if err := d.rdb.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q (%v), want wal", mode, err)
	}
	var pageSize int
	if err := d.rdb.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil || pageSize != 2048 {
		t.Fatalf("page size %d (%v), want 2048", pageSize, err)
	}
}
