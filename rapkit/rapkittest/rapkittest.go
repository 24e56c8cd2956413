// Package rapkittest checks a RAP tool server from a Go test: Check runs the
// conformance suite of `agentslice rap check` against it (discovery,
// invocation, error results, probes, status, cancellation, signed callback
// URLs verified by a receiver of its own) and reports each failed
// requirement as a test error.
//
//	func TestMyTools(t *testing.T) {
//		srv, _ := rapkit.NewServer(rapkit.ServerConfig{Name: "mine", Tools: myTools})
//		srv.Start(context.Background())
//		defer srv.Stop()
//		hs := httptest.NewServer(srv)
//		defer hs.Close()
//		rapkittest.Check(t, hs.URL, rapkittest.Probe("my_tool", `{"n": 3}`))
//	}
//
// It is for tests; a tool server must not import it. Its API holds no type
// of agentslice's internals (rapkit's api_test.go checks this package too).
package rapkittest

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/agentslice/agentslice/internal/rapcheck"
)

// T is what Check reports to: *testing.T and *testing.B are one.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
}

// Option adjusts a Check.
type Option func(*options)

type options struct{ cfg rapcheck.Config }

// Probe adds a call to make: the tool's name and its JSON arguments. It must
// produce a result (or a subscription that ends with a final event). Tools
// annotated readOnly whose schema accepts {} are probed without one.
func Probe(tool, args string) Option {
	return func(o *options) {
		if o.cfg.Probes == nil {
			o.cfg.Probes = map[string]json.RawMessage{}
		}
		o.cfg.Probes[tool] = json.RawMessage(args)
	}
}

// Timeout bounds each wait for an answer or a callback (default 10s).
func Timeout(d time.Duration) Option {
	return func(o *options) { o.cfg.Timeout = d }
}

// Check runs the conformance suite against the tool server at base (its
// base URL) and fails t for each requirement it does not meet; warnings
// (missed SHOULDs) are logged. The whole table is logged when anything
// failed. It reports whether every check passed.
func Check(t T, base string, opts ...Option) bool {
	t.Helper()
	o := options{cfg: rapcheck.Config{Base: base}}
	for _, opt := range opts {
		opt(&o)
	}
	rep, err := rapcheck.Run(context.Background(), o.cfg)
	if err != nil {
		t.Errorf("rapkittest: %v", err)
		return false
	}
	for _, r := range rep.Results {
		switch r.Status {
		case rapcheck.Fail:
			t.Errorf("rap check %s: %s", r.Check, r.Detail)
		case rapcheck.Warn:
			t.Logf("rap check %s (warning): %s", r.Check, r.Detail)
		}
	}
	if rep.Failed() {
		var b bytes.Buffer
		rep.Print(&b)
		t.Logf("the report:\n%s", b.String())
		return false
	}
	return true
}
