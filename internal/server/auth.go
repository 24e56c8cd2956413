package server

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"
)

// TokenEnv is the environment variable that sets (and wins over)
// Config.AuthToken.
const TokenEnv = "AGENTSLICE_TOKEN"

// loopback reports whether a listen address only accepts connections from
// this machine.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// requireToken wraps the API: with a token configured, every request but
// the signed callbacks and the console's static page must carry it, as
// "Authorization: Bearer <token>" or, for event streams (a browser's
// EventSource cannot set headers), "?access_token=<token>". Without a
// token, everything is open (loopback only: New refuses the rest).
func (s *Server) requireToken(next http.Handler) http.Handler {
	if s.token == "" {
		return next
	}
	want := []byte(s.token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == CallbackPath || p == "/" || strings.HasPrefix(p, consolePrefix) || p == "/healthz" || p == "/readyz" {
			next.ServeHTTP(w, r) // signed URLs; a static page with no data; liveness and readiness probes
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok && r.Method == http.MethodGet && strings.HasSuffix(p, "/events") {
			got, ok = r.URL.Query().Get("access_token"), true
		}
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentslice"`)
			writeError(w, http.StatusUnauthorized, "Authorization", "a bearer token is required (the server's auth_token or %s)", TokenEnv)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tokenTransport adds the server's token to the server's own requests to
// itself (the runtime dispatching to, cancelling at and asking the status
// of the in-process tool servers).
type tokenTransport struct {
	base  http.RoundTripper
	self  string // the server's base URL
	token string
}

func (t *tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.token != "" && strings.HasPrefix(r.URL.String(), t.self+"/") && r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	return t.base.RoundTrip(r)
}

// CloseIdleConnections closes the idle connections of the base transport
// (http.Client.CloseIdleConnections calls it).
func (t *tokenTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
