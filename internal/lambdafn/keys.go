package lambdafn

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
)

// DefaultKeyringTTL is how long a function uses the callback keyring it read
// from Secrets Manager before reading the secret again, so that a rotated
// key is picked up by warm execution environments within that time instead
// of only by new ones.
const DefaultKeyringTTL = 5 * time.Minute

// keyringRetry is how long a function waits before trying again after a
// failed re-read; it keeps the keys it has meanwhile.
const keyringRetry = time.Minute

// KeyringCache holds the callback keyring of a function and re-reads its
// secret once the TTL has passed. Refresh runs at the start of an
// invocation, in the invocation's context (Lambda freezes an environment
// between invocations, so there is no background refresher), and updates
// Keys in place (rap.Keyring.Update): the Signer and the Receiver built with
// Keys see the new key set at once. An inline keyring (local runs) is never
// re-read.
type KeyringCache struct {
	// Keys is the keyring to build Signers and Receivers with.
	Keys *rap.Keyring

	src  KeySource
	api  SecretsAPI
	ttl  time.Duration
	now  func() time.Time
	log  *slog.Logger
	mu   sync.Mutex
	next time.Time // when the secret is read again
}

// NewKeyringCache reads the keyring once (LoadKeyring) and returns the
// cache. ttl ≤ 0 means DefaultKeyringTTL; now and log may be nil.
func NewKeyringCache(ctx context.Context, src KeySource, api SecretsAPI, ttl time.Duration, now func() time.Time, log *slog.Logger) (*KeyringCache, error) {
	if ttl <= 0 {
		ttl = DefaultKeyringTTL
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	kr, err := LoadKeyring(ctx, src, api)
	if err != nil {
		return nil, err
	}
	return &KeyringCache{Keys: kr, src: src, api: api, ttl: ttl, now: now, log: log, next: now().Add(ttl)}, nil
}

// Refresh re-reads the secret when the TTL has passed. A failed read keeps
// the current keys (logged, tried again a minute later): a Secrets Manager
// outage must not stop callbacks signed with a key the function has.
func (c *KeyringCache) Refresh(ctx context.Context) {
	if c == nil || c.src.Inline != "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if now.Before(c.next) {
		return
	}
	kr, err := LoadKeyring(ctx, c.src, c.api)
	if err != nil {
		c.next = now.Add(keyringRetry)
		c.log.WarnContext(ctx, "callback keyring not re-read; keeping the current keys", "error", err.Error())
		return
	}
	if kr.CurrentID() != c.Keys.CurrentID() {
		c.log.InfoContext(ctx, "callback keyring rotated", "key", kr.CurrentID())
	}
	c.Keys.Update(kr)
	c.next = now.Add(c.ttl)
}

// refreshingAccepter refreshes the keyring before each callback.
type refreshingAccepter struct {
	rc    Accepter
	keys  *KeyringCache
	close func() // closes the class database's pool; nil without one
}

// Close releases the receiver's connections (the class database's pool).
// A Lambda environment never calls it; tests and embedders do.
func (r refreshingAccepter) Close() error {
	if r.close != nil {
		r.close()
	}
	return nil
}

func (r refreshingAccepter) Accept(ctx context.Context, query map[string][]string, body []byte) error {
	r.keys.Refresh(ctx)
	return r.rc.Accept(ctx, query, body)
}
