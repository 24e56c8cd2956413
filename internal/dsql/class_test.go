package dsql

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentslice/agentslice/internal/runtime"
)

// ThreadClass answers an existing thread's recorded class (interactive for
// a thread that recorded none) and ok=false for a thread never written,
// and it runs as the receiver's reader role, which may read nothing else.
func TestThreadClass(t *testing.T) {
	t.Parallel()
	owner, reader := rolePool(t, "as_reader_", GrantReaderRole)
	w := New(owner, Options{})
	bg := rootCommit("bg", 0, 1, item(runtime.ItemUser, "hi"))
	bg.State.Class = runtime.ClassBackground
	mustCommit(t, w, bg)
	mustCommit(t, w, rootCommit("plain", 0, 1, item(runtime.ItemUser, "hi")))

	r := New(reader, Options{})
	for id, want := range map[string]runtime.Class{"bg": runtime.ClassBackground, "plain": runtime.ClassInteractive} {
		got, ok, err := r.ThreadClass(context.Background(), id)
		if err != nil || !ok || got != want {
			t.Errorf("ThreadClass(%s) = %q, %v, %v; want %q, true", id, got, ok, err, want)
		}
	}
	if got, ok, err := r.ThreadClass(context.Background(), "never"); err != nil || ok {
		t.Errorf("ThreadClass(never) = %q, %v, %v; want not found", got, ok, err)
	}
	if _, _, err := r.ThreadClass(context.Background(), ""); err == nil {
		t.Error("ThreadClass with an empty ID succeeded")
	}
	// The reader role reads the thread rows and nothing else.
	for _, stmt := range []string{`SELECT * FROM items`, `SELECT * FROM thread_ancestors`,
		`UPDATE threads SET version = 0`, `INSERT INTO items VALUES ('x', 0, 0, 0, '')`} {
		_, err := reader.Exec(context.Background(), stmt)
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != "42501" {
			t.Errorf("%s as the reader role: %v, want permission denied (42501)", stmt, err)
		}
	}
}
