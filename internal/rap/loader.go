package rap

import (
	"github.com/agentslice/agentslice/rapkit"

	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// LoaderConfig configures a Loader. Dispatcher is required.
type LoaderConfig struct {
	// Servers are the tool servers' base URLs; each serves its toolset at
	// {base}/.well-known/rap-toolset.
	Servers []string
	// Base holds built-in tools offered beside the RAP tools (a
	// *runtime.Toolbox). Optional.
	Base       runtime.Toolset
	Dispatcher *Dispatcher
	// Client fetches toolsets; default: the Dispatcher's client.
	Client *http.Client
	// Fetch bounds the retries of one toolset fetch (5xx and transport
	// errors). Default: 3 attempts within 10s.
	Fetch RetryPolicy
	// MaxRoots bounds how many root threads' toolsets are cached (least
	// recently used first out). Default 10000.
	MaxRoots int
	// RetryIncomplete is how long a root's toolset that missed a server
	// (unreachable, or serving an invalid toolset) is kept before a later
	// slice fetches again; it doubles with each failed fetch of that root,
	// up to MaxRetryIncomplete. Default 30s.
	RetryIncomplete time.Duration
	// MaxRetryIncomplete caps that backoff. Default 30 minutes.
	MaxRetryIncomplete time.Duration
	// Deadlines overrides, per server base URL, how long a call to that
	// server's tools may stay pending (see runtime.Liveness); servers not
	// listed get the engine's default.
	Deadlines map[string]time.Duration
	Now       func() time.Time
	Logger    *slog.Logger
}

// Loader implements runtime.ToolSource for RAP: it loads the configured
// servers' toolsets once per root thread (a new root thread fetches fresh;
// children share their root's toolset) and caches the result.
//
// A server that cannot be reached, or whose toolset is invalid, is left out
// for that root thread and reported in Set.Problems and the log; the thread
// still gets every other tool. Tool names offered twice are disabled.
type Loader struct {
	cfg LoaderConfig

	mu     sync.Mutex
	roots  map[string]*list.Element // of *rootEntry
	lru    *list.List
	parsed map[string]*loadedToolset // by base and document hash: shared across roots
}

type rootEntry struct {
	root    string
	ready   chan struct{} // closed when set is filled (or the load was abandoned)
	set     *Set
	expires time.Time // zero: never
	// failures counts consecutive loads of this root that missed a server.
	failures int
}

var _ runtime.ToolSource = (*Loader)(nil)

// NewLoader checks cfg and returns a Loader.
func NewLoader(cfg LoaderConfig) (*Loader, error) {
	if cfg.Dispatcher == nil {
		return nil, errors.New("rap: LoaderConfig.Dispatcher is required")
	}
	for i, s := range cfg.Servers {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("rap: LoaderConfig.Servers[%d] = %q is not an absolute http(s) URL", i, s)
		}
		cfg.Servers[i] = strings.TrimRight(s, "/")
	}
	if len(cfg.Deadlines) > 0 {
		d := make(map[string]time.Duration, len(cfg.Deadlines))
		for k, v := range cfg.Deadlines {
			d[strings.TrimRight(k, "/")] = v
		}
		cfg.Deadlines = d
	}
	if cfg.Client == nil {
		cfg.Client = cfg.Dispatcher.client
	}
	if cfg.Fetch.Attempts <= 0 {
		cfg.Fetch.Attempts = 3
	}
	if cfg.Fetch.Total <= 0 {
		cfg.Fetch.Total = 10 * time.Second
	}
	if cfg.MaxRoots <= 0 {
		cfg.MaxRoots = 10000
	}
	if cfg.RetryIncomplete <= 0 {
		cfg.RetryIncomplete = 30 * time.Second
	}
	if cfg.MaxRetryIncomplete <= 0 {
		cfg.MaxRetryIncomplete = 30 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Loader{cfg: cfg, roots: map[string]*list.Element{}, lru: list.New(), parsed: map[string]*loadedToolset{}}, nil
}

// RootOf returns the root thread of t: the first entry of its stack, or t
// itself for a thread never written.
func RootOf(t *runtime.Thread) string {
	if len(t.State.Stack) > 0 {
		return t.State.Stack[0]
	}
	return t.ID
}

// Toolset returns the toolset of t's root thread, loading it on first use.
// It fails only when ctx ends while loading.
func (l *Loader) Toolset(ctx context.Context, t *runtime.Thread) (runtime.Toolset, error) {
	s, err := l.SetFor(ctx, RootOf(t))
	if err != nil {
		return nil, err
	}
	return s, nil
}

// SetFor returns the cached toolset of a root thread, loading it on first
// use. Concurrent callers for the same root share one load.
func (l *Loader) SetFor(ctx context.Context, root string) (*Set, error) {
	for {
		l.mu.Lock()
		now := l.cfg.Now()
		failures := 0
		if el, ok := l.roots[root]; ok {
			e := el.Value.(*rootEntry)
			select {
			case <-e.ready:
				if e.set != nil && (e.expires.IsZero() || now.Before(e.expires)) {
					l.lru.MoveToFront(el)
					l.mu.Unlock()
					return e.set, nil
				}
				failures = e.failures
				l.removeLocked(el) // expired or abandoned: load again
			default:
				l.mu.Unlock()
				select {
				case <-e.ready:
					continue
				case <-ctx.Done():
					return nil, fmt.Errorf("rap: waiting for the toolset of root thread %s: %w", root, ctx.Err())
				}
			}
		}
		e := &rootEntry{root: root, ready: make(chan struct{}), failures: failures}
		el := l.lru.PushFront(e)
		l.roots[root] = el
		for l.lru.Len() > l.cfg.MaxRoots {
			l.removeLocked(l.lru.Back())
		}
		l.mu.Unlock()

		set := l.Load(ctx)
		l.mu.Lock()
		if ctx.Err() != nil {
			// Do not cache what a cancelled load saw.
			if cur, ok := l.roots[root]; ok && cur == el {
				l.removeLocked(el)
			}
			close(e.ready)
			l.mu.Unlock()
			return nil, fmt.Errorf("rap: loading the toolset of root thread %s: %w", root, ctx.Err())
		}
		e.set = set
		if set.incomplete {
			e.failures++
			e.expires = l.cfg.Now().Add(l.retryAfter(e.failures))
		} else {
			e.failures = 0
		}
		close(e.ready)
		l.mu.Unlock()
		return set, nil
	}
}

// retryAfter is how long a toolset that missed a server is kept after the
// n-th failed load in a row: RetryIncomplete doubling, capped.
func (l *Loader) retryAfter(n int) time.Duration {
	d := l.cfg.RetryIncomplete
	for i := 1; i < n && d < l.cfg.MaxRetryIncomplete; i++ {
		d *= 2
	}
	return min(d, l.cfg.MaxRetryIncomplete)
}

func (l *Loader) removeLocked(el *list.Element) {
	e := el.Value.(*rootEntry)
	if cur, ok := l.roots[e.root]; ok && cur == el {
		delete(l.roots, e.root)
	}
	l.lru.Remove(el)
}

// Forget drops a root thread's cached toolset; its next slice fetches fresh.
func (l *Loader) Forget(root string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.roots[root]; ok {
		l.removeLocked(el)
	}
}

// CloseThread tells every configured server, best effort and in the
// background, that a thread was closed, and forgets the thread's cached
// toolset if it is a root. It never blocks.
func (l *Loader) CloseThread(threadID string) {
	for _, s := range l.cfg.Servers {
		l.cfg.Dispatcher.Notify(s+CloseThreadPath, CloseThread{ThreadID: threadID})
	}
	l.Forget(threadID)
}

// Load fetches every server's toolset now (concurrently, bypassing the
// cache) and builds a Set. Problems are logged and kept in Set.Problems.
func (l *Loader) Load(ctx context.Context) *Set {
	sets := make([]*loadedToolset, len(l.cfg.Servers))
	errs := make([]error, len(l.cfg.Servers))
	var wg sync.WaitGroup
	for i, base := range l.cfg.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sets[i], errs[i] = l.fetch(ctx, base)
		}()
	}
	wg.Wait()
	var ok []*loadedToolset
	var problems []error
	incomplete := false
	for i := range sets {
		if errs[i] != nil {
			// Unreachable or invalid: either may be fixed on the server
			// side, so the root fetches again later (with backoff), and is
			// never locked out for its life.
			problems = append(problems, errs[i])
			incomplete = true
			continue
		}
		ok = append(ok, sets[i])
	}
	set := buildSet(l.cfg.Base, l.cfg.Dispatcher, l.cfg.Servers, ok, problems)
	set.incomplete = incomplete
	for _, p := range set.problems {
		l.cfg.Logger.WarnContext(ctx, "rap: tools left out", "problem", p.Error())
	}
	return set
}

func (l *Loader) fetch(ctx context.Context, base string) (*loadedToolset, error) {
	body, err := rapkit.Exchange(ctx, l.cfg.Client, http.MethodGet, base+ToolsetPath, nil, l.cfg.Fetch, MaxToolsetBytes)
	if err != nil {
		var se *StatusError
		return nil, &ToolsetError{Server: base, Transient: !errors.As(err, &se), Err: err}
	}
	sum := sha256.Sum256(body)
	key := base + "\x00" + string(sum[:])
	l.mu.Lock()
	cached := l.parsed[key]
	l.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	doc, schemas, err := DecodeToolset(body)
	if err != nil {
		return nil, &ToolsetError{Server: base, Err: fmt.Errorf("rejected whole: %w", err)}
	}
	ls, err := newLoadedToolset(base, doc, schemas)
	if err != nil {
		return nil, &ToolsetError{Server: base, Err: fmt.Errorf("rejected whole: %w", err)}
	}
	ls.deadline = l.cfg.Deadlines[base]
	l.mu.Lock()
	if len(l.parsed) >= 1024 {
		clear(l.parsed) // a bound, not a policy: the documents are re-parsed on demand
	}
	l.parsed[key] = ls
	l.mu.Unlock()
	return ls, nil
}
