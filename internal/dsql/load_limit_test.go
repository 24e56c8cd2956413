package dsql

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A thread whose view outgrew what one load may read fails to load with a
// clear, permanent error naming it, whether the bytes are its own or
// inherited; the load stops reading at the bound. Other threads of the
// same store still load.
func TestLoadTooLarge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newSchemaPool(t)
	const limit = 4096
	s := New(pool, Options{Limits: Limits{MaxLoadBytes: limit}})
	long := make([]runtime.Item, 20)
	for i := range long {
		long[i] = item(runtime.ItemUser, strings.Repeat("l", 300))
	}
	c := rootCommit("long", 0, 0, long...)
	c.Children = []runtime.ChildThread{{ID: "long-kid", SpawnAt: 18, State: runtime.ThreadState{Parent: "long", Stack: []string{"long", "long-kid"}}}}
	mustCommit(t, s, c)
	mustCommit(t, s, rootCommit("short", 0, 0, item(runtime.ItemUser, "hello")))

	for _, id := range []string{"long", "long-kid"} {
		_, err := s.Load(ctx, id)
		var le *LoadTooLargeError
		if !errors.Is(err, ErrLoadTooLarge) || !errors.As(err, &le) || !runtime.IsPermanent(err) {
			t.Fatalf("loading %s: %v, want a permanent *LoadTooLargeError", id, err)
		}
		if le.ThreadID != id || le.Limit != limit || le.Loaded <= limit || le.Loaded > limit+400 || !strings.Contains(err.Error(), "thread "+id) {
			t.Fatalf("loading %s: %+v (%v): want the thread named and the load stopped just past the limit", id, le, err)
		}
	}
	if th, err := s.Load(ctx, "short"); err != nil || len(th.Items) != 1 {
		t.Fatalf("a small thread of the same store: %v, %v", th, err)
	}
	// The default bound reads the long thread whole.
	if th, err := New(pool, Options{}).Load(ctx, "long"); err != nil || len(th.Items) != len(long) {
		t.Fatalf("with the default bound: %v", err)
	}
}

// The database's own refusal of the load query for its size (DSQL's
// per-query memory and size limits; PostgreSQL cannot be made to raise
// them on demand, so the error values are built here) is the same error.
func TestClassifyLoad(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"53200", "54000"} {
		err := classifyLoad("t1", &pgconn.PgError{Code: code, Message: "query requires too much memory"})
		var le *LoadTooLargeError
		if !errors.As(err, &le) || !runtime.IsPermanent(err) || le.ThreadID != "t1" || !strings.Contains(err.Error(), "too much memory") {
			t.Fatalf("%s: %v", code, err)
		}
	}
	plain := &pgconn.PgError{Code: "08006", Message: "connection failure"}
	if err := classifyLoad("t1", plain); err != plain {
		t.Fatalf("a connection failure became %v", err)
	}
}
