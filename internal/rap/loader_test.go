package rap

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// toolsetServer serves a toolset document (changeable) and counts fetches.
type toolsetServer struct {
	srv    *httptest.Server
	doc    atomic.Value // string
	status atomic.Int64
	gets   counter
}

func newToolsetServer(t *testing.T, doc string) *toolsetServer {
	t.Helper()
	ts := &toolsetServer{}
	ts.doc.Store(doc)
	ts.status.Store(200)
	ts.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ToolsetPath || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		ts.gets.inc()
		w.WriteHeader(int(ts.status.Load()))
		_, _ = w.Write([]byte(ts.doc.Load().(string)))
	}))
	t.Cleanup(ts.srv.Close)
	return ts
}

func toolsetDoc(name string, tools ...string) string {
	var parts []string
	for _, tl := range tools {
		parts = append(parts, fmt.Sprintf(`{"name":%q,"description":"d","inputSchema":{"type":"object"}}`, tl))
	}
	return fmt.Sprintf(`{"name":%q,"endpoint":"/invoke","tools":[%s]}`, name, strings.Join(parts, ","))
}

func newTestLoader(t *testing.T, cfg LoaderConfig, servers ...*toolsetServer) *Loader {
	t.Helper()
	for _, s := range servers {
		cfg.Servers = append(cfg.Servers, s.srv.URL)
	}
	cfg.Dispatcher = newTestDispatcher(t, fastRetry(1))
	if cfg.Fetch.Attempts == 0 {
		cfg.Fetch = fastRetry(2)
	}
	cfg.Logger = quietLogger()
	l, err := NewLoader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func specNames(s runtime.Toolset) string {
	var names []string
	for _, sp := range s.Specs() {
		names = append(names, sp.Name)
	}
	return strings.Join(names, ",")
}

func TestLoaderDuplicateNamesDisableBoth(t *testing.T) {
	t.Parallel()
	a := newToolsetServer(t, toolsetDoc("alpha", "search", "a_only"))
	b := newToolsetServer(t, toolsetDoc("beta", "search", "b_only"))
	l := newTestLoader(t, LoaderConfig{}, a, b)
	set, err := l.SetFor(context.Background(), "root")
	if err != nil {
		t.Fatal(err)
	}
	if got := specNames(set); got != "a_only,b_only" {
		t.Fatalf("offered %s, want a_only,b_only", got)
	}
	if _, ok := set.Lookup("search"); ok {
		t.Fatal("a duplicated name is still offered")
	}
	var dup *DuplicateToolError
	if len(set.Problems()) != 1 || !errors.As(set.Problems()[0], &dup) {
		t.Fatalf("problems = %v", set.Problems())
	}
	msg := dup.Error()
	for _, want := range []string{`"search"`, `toolset "alpha"`, `toolset "beta"`, a.srv.URL, b.srv.URL} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %s", msg, want)
		}
	}
}

// A tool whose name is longer than model providers accept (RAP allows 128,
// Bedrock and OpenAI 64) is left out with a problem naming it; the rest of
// its toolset is offered, and a name of exactly 64 characters is kept.
func TestLoaderLeavesOutNamesModelsRefuse(t *testing.T) {
	t.Parallel()
	long, edge := strings.Repeat("x", MaxModelToolNameLen+1), strings.Repeat("y", MaxModelToolNameLen)
	a := newToolsetServer(t, toolsetDoc("alpha", long, edge, "search"))
	set, err := newTestLoader(t, LoaderConfig{}, a).SetFor(context.Background(), "root")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := specNames(set), "search,"+edge; got != want {
		t.Fatalf("offered %s, want %s", got, want)
	}
	if _, ok := set.Lookup(long); ok {
		t.Fatal("a name longer than models accept is still offered")
	}
	var le *LongToolNameError
	if len(set.Problems()) != 1 || !errors.As(set.Problems()[0], &le) || le.Name != long ||
		!strings.Contains(le.Error(), `toolset "alpha"`) || !strings.Contains(le.Error(), "at most 64") {
		t.Fatalf("problems = %v", set.Problems())
	}
}

func TestLoaderBuiltinWinsOverRAP(t *testing.T) {
	t.Parallel()
	base := runtime.NewToolbox().MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "spawn_thread"}, Sync: nopSync{}})
	a := newToolsetServer(t, toolsetDoc("alpha", "spawn_thread", "search"))
	set, _ := newTestLoader(t, LoaderConfig{Base: base}, a).SetFor(context.Background(), "root")
	e, ok := set.Lookup("spawn_thread")
	if !ok || e.Sync == nil {
		t.Fatalf("built-in spawn_thread lost: %+v %v", e, ok)
	}
	if got := specNames(set); got != "search,spawn_thread" {
		t.Fatalf("offered %s", got)
	}
	if len(set.Problems()) != 1 || !strings.Contains(set.Problems()[0].Error(), "built-in") {
		t.Fatalf("problems = %v", set.Problems())
	}
}

type nopSync struct{}

func (nopSync) Run(context.Context, *runtime.SyncEnv, runtime.Invocation) (runtime.ToolOutput, error) {
	return runtime.ToolOutput{}, nil
}

func TestLoaderRejectsInvalidToolsetWhole(t *testing.T) {
	t.Parallel()
	good := newToolsetServer(t, toolsetDoc("good", "ok_tool"))
	bad := newToolsetServer(t, `{"name":"bad","endpoint":"/i","tools":[{"name":"fine","description":"d","inputSchema":{"type":"object"}},{"name":"broken","description":"d","inputSchema":{"type":"object","required":"x"}}]}`)
	set, _ := newTestLoader(t, LoaderConfig{}, good, bad).SetFor(context.Background(), "root")
	if got := specNames(set); got != "ok_tool" {
		t.Fatalf("offered %s, want only ok_tool (the bad toolset's valid tool too must be rejected)", got)
	}
	var te *ToolsetError
	if len(set.Problems()) != 1 || !errors.As(set.Problems()[0], &te) || te.Transient || te.Server != bad.srv.URL ||
		!strings.Contains(te.Error(), "tools[1](broken).inputSchema") {
		t.Fatalf("problems = %v", set.Problems())
	}
}

func TestLoaderCachesPerRoot(t *testing.T) {
	t.Parallel()
	a := newToolsetServer(t, toolsetDoc("alpha", "one"))
	l := newTestLoader(t, LoaderConfig{}, a)
	ctx := context.Background()
	root := rootThread("root_1")
	child := &runtime.Thread{ID: "child", State: runtime.ThreadState{Stack: []string{"root_1", "child"}}}
	fresh := &runtime.Thread{ID: "never_written"} // a new root: no stack yet
	first, _ := l.Toolset(ctx, root)
	a.doc.Store(toolsetDoc("alpha", "one", "two"))
	again, _ := l.Toolset(ctx, child)
	if specNames(again) != "one" || a.gets.get() != 1 {
		t.Fatalf("child of a cached root: %s after %d fetches, want the root's toolset from 1 fetch", specNames(again), a.gets.get())
	}
	if first != again {
		t.Fatal("the root's toolset was not shared")
	}
	other, _ := l.Toolset(ctx, fresh)
	if specNames(other) != "one,two" || a.gets.get() != 2 {
		t.Fatalf("a new root: %s after %d fetches, want a fresh fetch", specNames(other), a.gets.get())
	}
	l.Forget("root_1")
	if s, _ := l.Toolset(ctx, root); specNames(s) != "one,two" {
		t.Fatalf("after Forget: %s", specNames(s))
	}
}

func TestLoaderConcurrentLoadsShareOneFetch(t *testing.T) {
	t.Parallel()
	a := newToolsetServer(t, toolsetDoc("alpha", "one"))
	l := newTestLoader(t, LoaderConfig{}, a)
	var wg sync.WaitGroup
	sets := make([]*Set, 8)
	for i := range sets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sets[i], _ = l.SetFor(context.Background(), "root")
		}()
	}
	wg.Wait()
	for _, s := range sets {
		if s != sets[0] {
			t.Fatal("concurrent loads of one root gave different sets")
		}
	}
	if n := a.gets.get(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

func TestLoaderRetriesUnreachableServerLater(t *testing.T) {
	t.Parallel()
	a := newToolsetServer(t, toolsetDoc("alpha", "one"))
	b := newToolsetServer(t, toolsetDoc("beta", "two"))
	b.status.Store(503)
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l := newTestLoader(t, LoaderConfig{Now: clock, RetryIncomplete: time.Minute}, a, b)
	ctx := context.Background()
	s1, _ := l.SetFor(ctx, "root")
	if specNames(s1) != "one" {
		t.Fatalf("offered %s while beta is down", specNames(s1))
	}
	var te *ToolsetError
	if len(s1.Problems()) != 1 || !errors.As(s1.Problems()[0], &te) || !te.Transient {
		t.Fatalf("problems = %v", s1.Problems())
	}
	if n := b.gets.get(); n != 2 {
		t.Fatalf("beta fetched %d times, want 2 (Fetch.Attempts)", n)
	}
	b.status.Store(200)
	if s, _ := l.SetFor(ctx, "root"); s != s1 {
		t.Fatal("refetched before RetryIncomplete passed")
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if s, _ := l.SetFor(ctx, "root"); specNames(s) != "one,two" {
		t.Fatalf("after RetryIncomplete: %s, want one,two", specNames(s))
	}
}

func TestLoaderBoundsCachedRoots(t *testing.T) {
	t.Parallel()
	a := newToolsetServer(t, toolsetDoc("alpha", "one"))
	l := newTestLoader(t, LoaderConfig{MaxRoots: 2}, a)
	ctx := context.Background()
	for _, r := range []string{"r1", "r2", "r3", "r1"} {
		_, _ = l.SetFor(ctx, r)
	}
	if n := a.gets.get(); n != 4 {
		t.Fatalf("%d fetches, want 4 (r1 was evicted by r3)", n)
	}
	l.mu.Lock()
	n := len(l.roots)
	l.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d roots cached, want 2", n)
	}
}

func TestLoaderCancelledLoadIsNotCached(t *testing.T) {
	t.Parallel()
	a := newToolsetServer(t, toolsetDoc("alpha", "one"))
	l := newTestLoader(t, LoaderConfig{}, a)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.SetFor(ctx, "root"); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if s, err := l.SetFor(context.Background(), "root"); err != nil || specNames(s) != "one" {
		t.Fatalf("after a cancelled load: %v, %v", s, err)
	}
}

func TestNewLoaderChecksServers(t *testing.T) {
	t.Parallel()
	d := newTestDispatcher(t, fastRetry(1))
	for _, bad := range []string{"", "localhost:80", "ftp://x", "http://"} {
		if _, err := NewLoader(LoaderConfig{Servers: []string{bad}, Dispatcher: d}); err == nil {
			t.Errorf("server %q accepted", bad)
		}
	}
	if _, err := NewLoader(LoaderConfig{}); err == nil {
		t.Error("a loader without a dispatcher was built")
	}
}

// TestLoaderRefetchesFailedToolsetWithBackoff: a toolset that was invalid
// (or unreachable) when a root thread started is fetched again on a later
// slice, after RetryIncomplete doubling with each failure, and offered
// once fixed: the thread is never locked out for its life.
func TestLoaderRefetchesFailedToolsetWithBackoff(t *testing.T) {
	t.Parallel()
	a := newToolsetServer(t, `{"name":"alpha","endpoint":"/invoke","tools":[{"name":"one"}]}`) // no description: invalid
	now := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	l := newTestLoader(t, LoaderConfig{Now: clock, RetryIncomplete: time.Minute, MaxRetryIncomplete: 3 * time.Minute}, a)
	ctx := context.Background()
	if s, _ := l.SetFor(ctx, "root"); specNames(s) != "" || len(s.Problems()) != 1 {
		t.Fatalf("invalid toolset offered %q, problems %v", specNames(s), s.Problems())
	}
	// Failures 1, 2, 3, 4 keep the set 1, 2, 3 (capped), 3 minutes.
	for i, wait := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute} {
		before := a.gets.get()
		advance(wait - time.Second)
		_, _ = l.SetFor(ctx, "root")
		if a.gets.get() != before {
			t.Fatalf("failure %d: refetched before %v passed", i+1, wait)
		}
		advance(time.Second)
		_, _ = l.SetFor(ctx, "root")
		if a.gets.get() != before+1 {
			t.Fatalf("failure %d: not refetched after %v", i+1, wait)
		}
	}
	a.doc.Store(toolsetDoc("alpha", "one"))
	advance(3 * time.Minute)
	if s, _ := l.SetFor(ctx, "root"); specNames(s) != "one" {
		t.Fatalf("fixed toolset not offered: %q", specNames(s))
	}
	n := a.gets.get()
	advance(time.Hour)
	if _, _ = l.SetFor(ctx, "root"); a.gets.get() != n {
		t.Fatal("a complete toolset was fetched again within its root's life")
	}
}
