package rap

import (
	"github.com/agentslice/agentslice/rapkit"

	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Callback URLs are capabilities. Each invocation's callback_url carries
//
//	t = thread ID, c = tool call ID, e = expiry (Unix seconds),
//	k = key ID, s = base64url(HMAC-SHA256(key, "rapcb1", k, t, c, e))
//
// as query parameters on the receiver's base URL, and p = the thread's
// priority class, then also signed (appended to the MAC input as "p",
// class), so the receiver queues the result in the thread's class's queue
// and a tool cannot move it to another (each part length-prefixed in the
// MAC input, so no two tuples share a MAC input). URLs minted before every
// URL carried p have p only for a background thread; one without p says
// nothing about the class, and a receiver given a class lookup
// (sqsq.Router.WithClassLookup) routes its results by the thread's class. Only the runtime
// holds the keys. The Keyring has a current key that signs and older keys
// that still verify, so keys rotate without breaking URLs already handed out:
// add a new current key, keep the old one until the longest TTL has passed,
// then drop it.
//
// Trace. For a traced dispatch, tp = the dispatch span's W3C traceparent,
// signed too ("tp", traceparent appended last), so the message a callback
// turns into carries the trace on (Capability.Trace) and a tool cannot
// graft its callbacks onto another trace.
//
// Incarnation. For a thread with an incarnation (runtime.ThreadState's,
// fixed when the thread was created), i = the incarnation, signed too ("i",
// incarnation appended to the MAC input after the class). A store wiped or a
// thread recreated under the same ID starts another incarnation: its call
// IDs already differ, and a receiver given the thread's current incarnation
// (ReceiverConfig.Incarnations) refuses a URL issued to an earlier one with
// 403 before anything is enqueued. URLs minted before incarnations carry
// no i and verify as before.
//
// Expiry. A call may turn into a subscription (a tool_result with
// subscription: true) and keep POSTing events for days, and the runtime
// cannot know that at dispatch time; a RAP tool has no way to receive a new
// URL later without breaking interop with tools written for Infinity. So every
// URL is signed with the long, configurable Signer.TTL from the start (30 days
// by default). The expiry is a bound on a leaked URL's life, not the liveness
// check: whether the call is still pending or its subscription still active is
// checked against thread state on every callback (the engine rejects results
// for unknown calls and events for unknown subscriptions, and a Receiver may be
// given a CallChecker to do it before enqueueing), so a URL stops working as
// soon as its call is closed and its subscription cancelled, long before it
// expires.

// Query parameter names of a signed callback URL.
const (
	paramThread  = "t"
	paramCall    = "c"
	paramExpires = "e"
	paramKey     = "k"
	paramSig     = "s"
	paramClass   = "p"  // the thread's priority class; absent in URLs minted before it was always set
	paramInc     = "i"  // optional: the thread's incarnation, when it has one
	paramTrace   = "tp" // optional: the W3C traceparent of the dispatch, when traced
)

// Sentinel errors of signature verification. A *CallbackError wraps them.
var (
	ErrBadSignature = errors.New("callback URL signature is missing or invalid")
	ErrExpired      = errors.New("callback URL has expired")
)

// MinKeyLen is the minimum length of a signing key in bytes.
const MinKeyLen = 32

// DefaultCallbackTTL is how long a callback URL stays valid when the Signer
// does not say.
const DefaultCallbackTTL = 30 * 24 * time.Hour

// Key is one HMAC key with its ID.
type Key struct {
	ID     string
	Secret []byte
}

// Keyring holds the current signing key and older keys that still verify.
// It is safe for concurrent use. Its key set is immutable, and Update
// replaces it whole and atomically (a rotated secret read again), so a
// Signer or Receiver holding the Keyring sees either the old or the new set.
type Keyring struct {
	set atomic.Pointer[keySet]
}

type keySet struct {
	current Key
	keys    map[string][]byte
}

func (kr *Keyring) load() *keySet { return kr.set.Load() }

// Update replaces kr's keys with next's.
func (kr *Keyring) Update(next *Keyring) { kr.set.Store(next.load()) }

// NewKeyring returns a keyring signing with current and also accepting the
// older keys. IDs must be 1..32 characters of [A-Za-z0-9_-] and distinct;
// secrets at least MinKeyLen bytes.
func NewKeyring(current Key, older ...Key) (*Keyring, error) {
	kr := &keySet{current: current, keys: map[string][]byte{}}
	for i, k := range append([]Key{current}, older...) {
		if k.ID == "" || len(k.ID) > 32 || !rapkit.ValidName(k.ID) {
			return nil, fmt.Errorf("rap: keyring key %d: id %q must be 1..32 characters of [A-Za-z0-9_-]", i, k.ID)
		}
		if len(k.Secret) < MinKeyLen {
			return nil, fmt.Errorf("rap: keyring key %q: secret is %d bytes, need at least %d", k.ID, len(k.Secret), MinKeyLen)
		}
		if _, dup := kr.keys[k.ID]; dup {
			return nil, fmt.Errorf("rap: keyring key id %q appears twice", k.ID)
		}
		kr.keys[k.ID] = append([]byte(nil), k.Secret...)
	}
	kr.current.Secret = kr.keys[current.ID]
	ring := &Keyring{}
	ring.set.Store(kr)
	return ring, nil
}

// ParseKeyring reads a keyring from "id:base64secret[,id:base64secret...]"
// (standard or URL base64, padded or not); the first key is the current one.
// It is meant for configuration taken from the environment.
func ParseKeyring(spec string) (*Keyring, error) {
	var keys []Key
	for i, part := range strings.Split(spec, ",") {
		id, b64, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("rap: keyring entry %d: want id:base64secret", i)
		}
		secret, err := decodeB64(b64)
		if err != nil {
			return nil, fmt.Errorf("rap: keyring entry %d (%s): secret is not base64: %w", i, id, err)
		}
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	if len(keys) == 0 {
		return nil, errors.New("rap: empty keyring")
	}
	return NewKeyring(keys[0], keys[1:]...)
}

func decodeB64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// CurrentID returns the ID of the key that signs.
func (kr *Keyring) CurrentID() string { return kr.load().current.ID }

func mac(secret []byte, kid, thread, call, exp, class, inc, tp string) []byte {
	h := hmac.New(sha256.New, secret)
	parts := []string{"rapcb1", kid, thread, call, exp}
	if class != "" {
		parts = append(parts, "p", class)
	}
	if inc != "" {
		parts = append(parts, "i", inc)
	}
	if tp != "" {
		parts = append(parts, "tp", tp)
	}
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return h.Sum(nil)
}

// Capability is what a verified callback URL grants: callbacks for one tool
// call of one thread until Expires.
type Capability struct {
	ThreadID string
	CallID   string
	// Class is the thread's priority class as signed into the URL ("" for
	// URLs minted without one, which says nothing: such URLs were minted
	// for interactive threads without p and, earlier still, for every
	// thread).
	Class runtime.Class
	// Incarnation is the thread's incarnation as signed into the URL (""
	// for URLs minted without one).
	Incarnation string
	// Trace is the W3C traceparent of the dispatch the URL was minted for,
	// as signed into it ("" for URLs minted without one); the callback's
	// message carries it on, so the slice it wakes continues the trace.
	Trace   string
	Expires time.Time
	KeyID   string
}

// CallbackError is a callback the receiver refuses, with the HTTP status to
// answer and the reason (naming the field or parameter at fault).
type CallbackError struct {
	Status int
	Field  string
	Err    error
}

func (e *CallbackError) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("field %q: %v", e.Field, e.Err)
}

func (e *CallbackError) Unwrap() error { return e.Err }

// Verify checks the signature and expiry carried by a callback URL's query.
// Failures are *CallbackError values wrapping ErrBadSignature or ErrExpired.
func (kr *Keyring) Verify(q url.Values, now time.Time) (Capability, error) {
	bad := func(field, reason string) (Capability, error) {
		return Capability{}, &CallbackError{Status: 403, Field: field, Err: fmt.Errorf("%w: %s", ErrBadSignature, reason)}
	}
	get := func(name string) (string, bool) {
		vs := q[name]
		if len(vs) != 1 || vs[0] == "" {
			return "", false
		}
		return vs[0], true
	}
	thread, ok1 := get(paramThread)
	call, ok2 := get(paramCall)
	exp, ok3 := get(paramExpires)
	kid, ok4 := get(paramKey)
	sig, ok5 := get(paramSig)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return bad("", "the URL lacks one of the signed parameters t, c, e, k, s (each exactly once)")
	}
	secret, known := kr.load().keys[kid]
	if !known {
		return bad(paramKey, "unknown signing key")
	}
	var class string
	if vs, ok := q[paramClass]; ok {
		if len(vs) != 1 || !runtime.Class(vs[0]).Valid() || vs[0] == "" {
			return bad(paramClass, "the priority class must appear at most once and be a known class")
		}
		class = vs[0]
	}
	var inc string
	if vs, ok := q[paramInc]; ok {
		if len(vs) != 1 || vs[0] == "" {
			return bad(paramInc, "the incarnation must appear at most once and not be empty")
		}
		inc = vs[0]
	}
	var tp string
	if vs, ok := q[paramTrace]; ok {
		if len(vs) != 1 || vs[0] == "" {
			return bad(paramTrace, "the traceparent must appear at most once and not be empty")
		}
		tp = vs[0]
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(secret, kid, thread, call, exp, class, inc, tp)) {
		return bad(paramSig, "signature does not match")
	}
	secs, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return bad(paramExpires, "expiry is not a number")
	}
	expires := time.Unix(secs, 0)
	if !now.Before(expires) {
		return Capability{}, &CallbackError{Status: 403, Field: paramExpires,
			Err: fmt.Errorf("%w (at %s)", ErrExpired, expires.UTC().Format(time.RFC3339))}
	}
	return Capability{ThreadID: thread, CallID: call, Class: runtime.Class(class), Incarnation: inc, Trace: tp, Expires: expires, KeyID: kid}, nil
}

// Signer mints callback URLs.
type Signer struct {
	Keys *Keyring
	// BaseURL is the absolute URL the Receiver is reachable at.
	BaseURL string
	// TTL is how long a URL stays valid; DefaultCallbackTTL when zero.
	TTL time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// CallbackURL returns the signed callback URL for one tool call of an
// interactive thread.
func (s *Signer) CallbackURL(threadID, callID string) (string, error) {
	return s.ClassCallbackURL(threadID, callID, "")
}

// ClassCallbackURL returns the signed callback URL for one tool call of a
// thread of the given class ("" is interactive). The class is signed into
// the URL so the receiver queues the results in the class's queue.
func (s *Signer) ClassCallbackURL(threadID, callID string, class runtime.Class) (string, error) {
	return s.InvocationCallbackURL(runtime.Invocation{ThreadID: threadID, CallID: callID, Class: class})
}

// InvocationCallbackURL returns the signed callback URL for an
// invocation: its thread, call, class (as ClassCallbackURL) and the
// thread's incarnation, when it has one.
func (s *Signer) InvocationCallbackURL(inv runtime.Invocation) (string, error) {
	threadID, callID, class := inv.ThreadID, inv.CallID, inv.Class
	if s == nil || s.Keys == nil {
		return "", errors.New("rap: signer has no keyring")
	}
	u, err := url.Parse(s.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("rap: signer base URL %q is not an absolute http(s) URL", s.BaseURL)
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = DefaultCallbackTTL
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	exp := strconv.FormatInt(now().Add(ttl).Unix(), 10)
	set := s.Keys.load()
	kid := set.current.ID
	q := u.Query()
	q.Set(paramThread, threadID)
	q.Set(paramCall, callID)
	q.Set(paramExpires, exp)
	q.Set(paramKey, kid)
	p := string(class.OrDefault())
	q.Set(paramClass, p)
	if inv.Incarnation != "" {
		q.Set(paramInc, inv.Incarnation)
	}
	if inv.Trace != "" {
		q.Set(paramTrace, inv.Trace)
	}
	q.Set(paramSig, base64.RawURLEncoding.EncodeToString(mac(set.current.Secret, kid, threadID, callID, exp, p, inv.Incarnation, inv.Trace)))
	u.RawQuery = q.Encode()
	return u.String(), nil
}
