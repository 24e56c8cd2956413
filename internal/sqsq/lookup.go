package sqsq

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// ClassLookup finds an existing thread's priority class. A thread's class
// is fixed when it is created (runtime.ThreadState.Class), so an answer
// for an existing thread may be cached for ever. ok is false for a thread
// that does not exist yet: a message to it creates an interactive thread
// unless the message names a class, so such a message is routed as
// interactive and the answer is not cached (the thread may be created
// later, by a message that names its class).
type ClassLookup interface {
	ThreadClass(ctx context.Context, threadID string) (c runtime.Class, ok bool, err error)
}

// DefaultClassCacheSize bounds the cache of WithClassLookup: one entry is
// a thread ID and a class, about 100 bytes, so the default costs at most
// about 1 MB of a function's memory.
const DefaultClassCacheSize = 10_000

// WithClassLookup makes r route a message that carries no class (a
// callback URL signed before URLs carried the class, `agentslice send`
// without -class) by its thread's class, looked up with l and cached
// (at most size threads; DefaultClassCacheSize when size <= 0). Without it
// such a message goes to the interactive queue, and a message to a
// background thread would leave the order of the thread's other messages.
// A failed lookup fails the send (a transient error: the sender retries),
// never a guess that could break the thread's order.
func (r *Router) WithClassLookup(l ClassLookup, size int) *Router {
	if size <= 0 {
		size = DefaultClassCacheSize
	}
	r.lookup = &classCache{l: l, size: size, m: map[string]runtime.Class{}}
	return r
}

// classCache remembers the classes of existing threads. When full it
// forgets everything and starts again: the entries never go stale, so
// the only cost of forgetting is a lookup per thread seen again.
type classCache struct {
	l    ClassLookup
	size int
	mu   sync.Mutex
	m    map[string]runtime.Class
}

func (c *classCache) class(ctx context.Context, threadID string) (runtime.Class, error) {
	c.mu.Lock()
	cl, hit := c.m[threadID]
	c.mu.Unlock()
	if hit {
		return cl, nil
	}
	cl, ok, err := c.l.ThreadClass(ctx, threadID)
	if err != nil {
		return "", fmt.Errorf("sqsq: looking up the priority class of thread %s: %w", threadID, err)
	}
	if !ok {
		return runtime.ClassInteractive, nil
	}
	if !cl.Valid() {
		return "", runtime.Permanent(fmt.Errorf("sqsq: thread %s has unknown priority class %q", threadID, cl))
	}
	cl = cl.OrDefault()
	c.mu.Lock()
	if len(c.m) >= c.size {
		clear(c.m)
	}
	c.m[threadID] = cl
	c.mu.Unlock()
	return cl, nil
}
