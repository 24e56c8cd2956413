package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv"
)

func userInputs(items []runtime.Item) []string {
	var out []string
	for _, it := range items {
		if it.Kind == runtime.ItemUser {
			out = append(out, it.Input)
		}
	}
	return out
}

// TestRestartKeepsThreads: threads survive a stop and start on the same
// data directory, a retried message ID is consumed once, and GET /threads
// lists them after the restart.
func TestRestartKeepsThreads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := Config{Script: testdata(t, "hello_script.json"), Data: dir}
	first := startServer(t, cfg)
	postMessage(t, first, "thr_a", `{"text":"hi","id":"m1"}`)
	waitIdle(t, first)
	first.Stop()

	second := startServer(t, cfg)
	var list treeResponse
	if code := do(t, "GET", second.URL()+"/threads", "", &list); code != 200 || list.Count != 1 || list.Threads[0].ID != "thr_a" {
		t.Fatalf("GET /threads after restart: %d %+v", code, list)
	}
	postMessage(t, second, "thr_a", `{"text":"hi","id":"m1"}`) // a client's retry
	waitIdle(t, second)
	th := getThread(t, second, "thr_a")
	if in := userInputs(th.Items); len(in) != 1 || in[0] != "m1" || th.Items[len(th.Items)-1].Text != "Hello from the scripted model." {
		t.Fatalf("after restart and retry: %s (inputs %v)", kinds(th.Items), in)
	}
}

// TestSecondServerOnADataDirectoryIsRefused: a second server on the same
// directory stops at Start with an error naming the lock.
func TestSecondServerOnADataDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startServer(t, Config{Data: dir})
	srv, err := New(context.Background(), Config{Listen: "127.0.0.1:0", Data: dir}, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Start(context.Background())
	if !errors.Is(err, disk.ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Start = %v, want ErrLocked naming %s", err, dir)
	}
	srv.Stop()
}

// TestMemoryStoreStartsEmpty: -store memory keeps nothing across restarts
// and writes nothing to the data directory.
func TestMemoryStoreStartsEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := Config{Script: testdata(t, "hello_script.json"), Store: StoreMemory, Data: dir}
	first := startServer(t, cfg)
	postMessage(t, first, "thr_m", `{"text":"hi"}`)
	waitIdle(t, first)
	first.Stop()
	second := startServer(t, cfg)
	var list treeResponse
	if code := do(t, "GET", second.URL()+"/threads", "", &list); code != 200 || list.Count != 0 {
		t.Fatalf("GET /threads after a restart of the memory store: %d %+v", code, list)
	}
}

// TestPostgresStore: -dsn runs serve's history on PostgreSQL through the
// DSQL store.
func TestPostgresStore(t *testing.T) {
	t.Parallel()
	dsn := testenv.Need(t, "AGENTSLICE_TEST_PG_DSN")
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	thread := "thr_pg_" + hex.EncodeToString(b)
	srv := startServer(t, Config{Script: testdata(t, "hello_script.json"), DSN: dsn})
	postMessage(t, srv, thread, `{"text":"hi"}`)
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	if len(th.Items) != 2 || th.Items[1].Text != "Hello from the scripted model." {
		t.Fatalf("history on PostgreSQL: %s", kinds(th.Items))
	}
	var list treeResponse
	do(t, "GET", srv.URL()+"/threads", "", &list)
	found := false
	for _, n := range list.Threads {
		found = found || n.ID == thread
	}
	if !found && !list.Truncated {
		t.Fatalf("GET /threads does not list %s", thread)
	}
}

func TestStoreConfiguration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{Store: "redis"}, "store"},
		{Config{Store: StoreMemory, DSN: "postgres://x"}, "dsn"},
		{Config{Store: StorePostgres}, "dsn"},
		{Config{DSN: "mysql://x"}, "dsn"},
	} {
		err := tc.cfg.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: %v, want a ConfigError on %s", tc.cfg, err, tc.field)
		}
	}
	if got := DefaultDataDir(func(k string) string { return map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}[k] }); got != "/x/agentslice" {
		t.Errorf("with XDG_DATA_HOME: %s", got)
	}
	if got := DefaultDataDir(func(k string) string { return map[string]string{"HOME": "/h"}[k] }); got != "/h/.local/share/agentslice" {
		t.Errorf("without XDG_DATA_HOME: %s", got)
	}
}
