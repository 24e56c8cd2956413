package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/disk"
	"github.com/agentslice/agentslice/internal/local"
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

type recordingChecker struct {
	mu    sync.Mutex
	calls []string
}

func (r *recordingChecker) CheckPendingCall(ctx context.Context, threadID string, call runtime.PendingCall) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, threadID+"/"+call.ID)
	return false, nil
}

// TestRecoveryOfPendingCalls: at start, a call to an in-process tool that
// was running when the process died gets an error result (the model goes
// on); a call to an external tool is handed to the PendingCalls hook; a
// sleep is left to its timer.
func TestRecoveryOfPendingCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := disk.Open(ctx, dir, disk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id, call := range map[string]runtime.PendingCall{
		"thr_local": {ID: "c-local", Name: "get_time", Args: `{"timezone":"UTC"}`, Dispatched: true},
		"thr_ext":   {ID: "c-ext", Name: "deploy", Args: `{}`, Dispatched: true},
		"thr_sleep": {ID: "c-sleep", Name: "sleep_until_event_or_input", Args: `{}`, Dispatched: true},
	} {
		c := call
		err := db.History().Commit(ctx, &runtime.Commit{ThreadID: id, Expected: 0,
			Append: []runtime.Item{{Kind: runtime.ItemUser, Input: "u-" + id, Text: "go"}, {Kind: runtime.ItemToolCall, CallID: c.ID, Name: c.Name, Args: c.Args}},
			State:  runtime.ThreadState{Version: 1, Length: 2, Stack: []string{id}, Pending: &c}})
		if err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	checker := &recordingChecker{}
	srv, err := New(ctx, Config{Listen: "127.0.0.1:0", Data: dir, Script: testdata(t, "hello_script.json"), ExampleTools: &ExampleTools{GetTime: true}},
		Options{Logger: quietLogger(), Getenv: func(string) string { return "" }, PendingCalls: checker})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	waitIdle(t, srv)
	th := getThread(t, srv, "thr_local")
	// The script has no step left for the completion after the error
	// result: that completion fails for good, in history.
	if th.Status != "failed" || len(th.Items) < 3 || th.Items[2].Kind != runtime.ItemToolResult || !th.Items[2].IsError ||
		!strings.Contains(th.Items[2].Text, "restarted") {
		t.Fatalf("in-process call after restart: %s %+v", kinds(th.Items), th.Items)
	}
	checker.mu.Lock()
	got := strings.Join(checker.calls, ",")
	checker.mu.Unlock()
	if got != "thr_ext/c-ext" {
		t.Fatalf("hook asked about %q, want only thr_ext/c-ext", got)
	}
	for id, want := range map[string]string{"thr_ext": "waiting_for_tool", "thr_sleep": "sleeping"} {
		if th := getThread(t, srv, id); th.Status != want {
			t.Fatalf("%s: %s, want still %s", id, th.Status, want)
		}
	}
}

// serve's history wrapper keeps the disk store's answer to
// CommitsWaitForDisk, so the embedded system sizes its slots for it.
func TestPublishingStoreKeepsDiskWaiting(t *testing.T) {
	t.Parallel()
	for _, noSync := range []bool{false, true} {
		db, err := disk.Open(context.Background(), t.TempDir(), disk.Options{NoSync: noSync})
		if err != nil {
			t.Fatal(err)
		}
		dw, ok := newPublishingStore(db.History(), &Server{}).(local.DiskWaiter)
		if !ok || dw.CommitsWaitForDisk() == noSync {
			t.Errorf("NoSync %v: the wrapped disk store reports DiskWaiter %v, waiting %v", noSync, ok, ok && dw.CommitsWaitForDisk())
		}
		db.Close()
	}
	if dw, ok := newPublishingStore(local.NewHistoryStore(), &Server{}).(local.DiskWaiter); ok && dw.CommitsWaitForDisk() {
		t.Error("the wrapped memory store reports that its commits wait for the disk")
	}
}

// TestRecoveryCountsWhatItRearms: a start re-arms the stored timers and
// the log counts them by kind: a liveness check and a provider wait are
// not sleeps (a clean restart with nothing asleep once reported
// sleeps_rearmed=8); a timer due after limits.timer_horizon is counted as
// later, not armed.
func TestRecoveryCountsWhatItRearms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := disk.Open(ctx, dir, disk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tm := db.Timers(nil)
	soon, later := time.Now().Add(30*time.Second), time.Now().Add(time.Hour)
	for _, x := range []runtime.Timer{
		{ThreadID: "t", CallID: "c2", At: later, Message: runtime.Message{V: 1, ID: "wake-c2", ThreadID: "t", Kind: runtime.KindWake, ToolCallID: "c2"}},
		{ThreadID: "t", CallID: "chk1~c1", At: soon, Message: runtime.Message{V: 1, ID: "chk-1", ThreadID: "t", Kind: runtime.KindCheck, ToolCallID: "c1", Text: "1"}},
		{ThreadID: "t", CallID: "mwait1", At: soon, Message: runtime.Message{V: 1, ID: "mwait-1", ThreadID: "t", Kind: runtime.KindRetry, Text: "1"}},
	} {
		if err := tm.Schedule(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	tm.Stop()
	db.Close()
	logs := &logBuffer{}
	srv, err := New(ctx, Config{Listen: "127.0.0.1:0", Data: dir},
		Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if out := logs.String(); !strings.Contains(out, "sleeps_rearmed=0 checks_rearmed=1 provider_waits_rearmed=1 timers_later=1") {
		t.Fatalf("recovery log:\n%s", out)
	}
}
