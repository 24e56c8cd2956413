package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv"
)

// preMigration5 returns the DSN of a fresh schema (dropped when the test
// ends) holding thread id as the store wrote it before migration 5: 10
// user turns, a summary covering 8 of them and 3 more turns (view start
// 8), then the columns migration 5 added dropped, as
// internal/dsql's backfill tests fake it.
func preMigration5(t *testing.T, id string) string {
	t.Helper()
	dsn := testenv.Need(t, "AGENTSLICE_TEST_PG_DSN")
	ctx := context.Background()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	schema := "t_" + hex.EncodeToString(rnd[:])
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to AGENTSLICE_TEST_PG_DSN: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("cleanup: dropping schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema) // a runtime parameter of every connection (pgx)
	u.RawQuery = q.Encode()
	sdsn := u.String()

	pool, err := dsql.NewPool(ctx, dsql.Config{Dialect: dsql.Postgres, DSN: sdsn})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := dsql.Migrate(ctx, pool, dsql.Postgres); err != nil {
		t.Fatal(err)
	}
	s := dsql.New(pool, dsql.Options{})
	var first []runtime.Item
	for k := range 10 {
		first = append(first, runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("%s-in-%d", id, k), Text: fmt.Sprint("turn ", k)})
	}
	more := []runtime.Item{{Kind: runtime.ItemSummary, Input: id + "-sum", Text: "SUMMARY", Args: `{"covers":8}`}}
	for k := range 3 {
		more = append(more, runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("%s-after-%d", id, k), Text: "after"})
	}
	for _, c := range []*runtime.Commit{
		{ThreadID: id, Append: first, State: runtime.ThreadState{Version: 1, Length: 10, Stack: []string{id}}},
		{ThreadID: id, Expected: 1, Append: more, State: runtime.ThreadState{Version: 2, Length: 14, Stack: []string{id}, ViewStart: 8}},
	} {
		if err := s.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{
		`ALTER TABLE threads DROP COLUMN view_start`,
		`ALTER TABLE threads DROP COLUMN inputs_from`,
		`ALTER TABLE items DROP COLUMN input`,
		`DELETE FROM schema_migrations WHERE version = 5`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return sdsn
}

// sliceBase is where a slice's load of thread id starts in srv's store.
func sliceBase(t *testing.T, srv *Server, id string) int {
	t.Helper()
	th, _, err := srv.store.(pgThreads).LoadViewFor(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	return th.Base
}

// waitBackfill waits for srv's backfill to end.
func waitBackfill(t *testing.T, srv *Server) {
	t.Helper()
	if srv.backfillDone == nil {
		t.Fatal("serve -store postgres started no backfill")
	}
	select {
	case <-srv.backfillDone:
	case <-time.After(60 * time.Second):
		t.Fatal("the backfill did not finish in 60s")
	}
}

// TestServeBackfillsOldThreads: a thread written before migration 5 loads
// whole on every slice; serve on PostgreSQL backfills it in the
// background, after which its slices load from its view start (8) and a
// message to it is answered; with backfill.disabled it keeps loading
// whole.
func TestServeBackfillsOldThreads(t *testing.T) {
	t.Parallel()
	t.Run("on", func(t *testing.T) {
		t.Parallel()
		dsn := preMigration5(t, "old")
		srv := startServer(t, Config{Script: testdata(t, "hello_script.json"), DSN: dsn, Backfill: Backfill{Pause: "1ms"}})
		waitBackfill(t, srv)
		if got := sliceBase(t, srv, "old"); got != 8 {
			t.Fatalf("after serve's backfill the old thread's slices load from %d, want 8 (its view start)", got)
		}
		postMessage(t, srv, "old", `{"text":"still there?"}`)
		waitIdle(t, srv)
		if th := getThread(t, srv, "old"); len(th.Items) != 16 || th.Items[15].Text != "Hello from the scripted model." {
			t.Fatalf("the old thread after a slice: %s", kinds(th.Items))
		}
	})
	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		dsn := preMigration5(t, "old")
		srv := startServer(t, Config{Script: testdata(t, "hello_script.json"), DSN: dsn, Backfill: Backfill{Disabled: true, Pause: "1ms"}})
		if srv.backfillDone != nil {
			t.Fatal("backfill.disabled started the backfill")
		}
		if got := sliceBase(t, srv, "old"); got != 0 {
			t.Fatalf("without the backfill the old thread's slices load from %d, want 0 (whole)", got)
		}
	})
}

// signalHandler passes records to next and sends the messages of error
// records on errs (dropped when nobody listens).
type signalHandler struct {
	slog.Handler
	errs chan string
}

func (h signalHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		select {
		case h.errs <- r.Message:
		default:
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h signalHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return signalHandler{h.Handler.WithAttrs(a), h.errs}
}

func (h signalHandler) WithGroup(n string) slog.Handler {
	return signalHandler{h.Handler.WithGroup(n), h.errs}
}

// TestServeBackfillRetriesAFailure: a backfill that fails (an item it
// cannot decode) is logged and tried again later, /readyz answers ready
// meanwhile, and once the item is mended the next try completes it.
func TestServeBackfillRetriesAFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := preMigration5(t, "old")
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	var format int16
	var body string
	if err := db.QueryRow(ctx, `SELECT format, body FROM items WHERE thread_id = 'old' AND pos = 3 AND chunk = 0`).Scan(&format, &body); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE items SET format = 1, body = '{"kind":' WHERE thread_id = 'old' AND pos = 3`); err != nil {
		t.Fatal(err)
	}
	errs := make(chan string, 16)
	logs := &logBuffer{}
	logger := slog.New(signalHandler{slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}), errs})
	retry := rap.RetryPolicy{Attempts: 5, Base: time.Millisecond, Max: 20 * time.Millisecond, Total: 10 * time.Second}
	srv, err := New(ctx, Config{Listen: "127.0.0.1:0", Script: testdata(t, "hello_script.json"), DSN: dsn, Backfill: Backfill{Pause: "1ms"}},
		Options{Logger: logger, RAPRetry: &retry, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Stop()
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	for failures := 0; failures < 2; { // a failure, then its retry's
		select {
		case msg := <-errs:
			if strings.HasPrefix(msg, "backfill of threads written before schema version 5 failed") {
				failures++
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no backfill failure logged in 60s")
		}
	}
	if code := do(t, http.MethodGet, srv.URL()+"/readyz", "", nil); code != http.StatusOK {
		t.Fatalf("/readyz %d while the backfill fails, want 200", code)
	}
	if _, err := db.Exec(ctx, `UPDATE items SET format = $1, body = $2 WHERE thread_id = 'old' AND pos = 3`, format, body); err != nil {
		t.Fatal(err)
	}
	waitBackfill(t, srv)
	if got := sliceBase(t, srv, "old"); got != 8 {
		t.Fatalf("after the mended backfill the old thread's slices load from %d, want 8", got)
	}
}
