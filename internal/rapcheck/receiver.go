package rapcheck

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/rapkit"
)

// received is one callback POST the local receiver got.
type received struct {
	cb       *rapkit.Callback // nil when the body did not decode
	err      error            // why the body or its URL was refused
	attempt  int              // 1 for the first POST of this call, 2 for the next...
	verified bool             // the URL's signature checked out for this call
}

// receiver is the checker's stand-in for a runtime's callback endpoint: it
// mints signed callback URLs per (thread, call), verifies every POST's
// signature as agentslice's receiver does, decodes the body, and hands it
// to whoever waits for that call. It can answer a call's first POST 503, to
// see whether the tool retries.
type receiver struct {
	keys   *rap.Keyring
	signer *rap.Signer
	srv    *http.Server
	ln     net.Listener
	done   chan struct{}

	mu       sync.Mutex
	calls    map[string]chan received // by call ID
	attempts map[string]int
	fail503  map[string]bool
	stray    []string // POSTs no call of ours could claim
}

func startReceiver(host string) (*receiver, error) {
	secret := make([]byte, rap.MinKeyLen)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	keys, err := rap.NewKeyring(rap.Key{ID: "rapcheck", Secret: secret})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("listening for callbacks on %s: %w", host, err)
	}
	r := &receiver{keys: keys, ln: ln, done: make(chan struct{}), calls: map[string]chan received{},
		attempts: map[string]int{}, fail503: map[string]bool{}}
	r.signer = &rap.Signer{Keys: keys, BaseURL: "http://" + ln.Addr().String() + "/rap/callback", TTL: time.Hour}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

func (r *receiver) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
	<-r.done
}

// expect registers a call and returns its callback URL and the channel its
// callbacks arrive on.
func (r *receiver) expect(thread, call string, fail503 bool) (string, <-chan received, error) {
	u, err := r.signer.CallbackURL(thread, call)
	if err != nil {
		return "", nil, err
	}
	ch := make(chan received, 64)
	r.mu.Lock()
	r.calls[call] = ch
	r.fail503[call] = fail503
	r.mu.Unlock()
	return u, ch, nil
}

func (r *receiver) strays() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.stray...)
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(http.MaxBytesReader(w, req.Body, rapkit.MaxCallbackBody))
	capa, verr := r.keys.Verify(req.URL.Query(), time.Now())
	callID := req.URL.Query().Get("c")
	r.mu.Lock()
	ch := r.calls[callID]
	if ch == nil {
		r.stray = append(r.stray, fmt.Sprintf("%s %s: not a callback URL this checker gave out (was its query dropped?)", req.Method, req.URL.Path))
		r.mu.Unlock()
		http.Error(w, "no call of this checker has that callback URL", http.StatusNotFound)
		return
	}
	r.attempts[callID]++
	attempt := r.attempts[callID]
	fail := r.fail503[callID] && attempt == 1
	r.mu.Unlock()

	got := received{attempt: attempt, verified: verr == nil && capa.CallID == callID}
	switch {
	case req.Method != http.MethodPost:
		got.err = fmt.Errorf("callback sent with %s, not POST", req.Method)
	case verr != nil:
		got.err = fmt.Errorf("callback URL does not verify (was it changed?): %v", verr)
	default:
		cb, err := rapkit.DecodeCallback(body)
		if err != nil {
			got.err = fmt.Errorf("callback body refused: %v", err)
		}
		got.cb = cb
	}
	switch {
	case fail:
		http.Error(w, "rapcheck: answering the first POST 503 to see the tool retry", http.StatusServiceUnavailable)
	case got.err != nil && !got.verified:
		http.Error(w, got.err.Error(), http.StatusForbidden)
	case got.err != nil:
		http.Error(w, got.err.Error(), http.StatusBadRequest)
	default:
		w.WriteHeader(http.StatusOK)
	}
	// Answered before the checker hears of it, so a check that ends on this
	// callback leaves no POST of the tool's half done.
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	ch <- got
}

// next waits for the call's next callback.
func next(ctx context.Context, ch <-chan received, timeout time.Duration) (received, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case got := <-ch:
		return got, nil
	case <-t.C:
		return received{}, fmt.Errorf("no callback within %s", timeout)
	case <-ctx.Done():
		return received{}, ctx.Err()
	}
}

var errNoResult = errors.New("no tool_result")
