package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/rapcheck"
)

// TestPassesRapCheck serves the example tool and runs `agentslice rap
// check`'s conformance suite against it, with a probe that waits for a URL
// answering 503 twice and then 200: every check passes, and the probe saw a
// subscription end with a final event.
func TestPassesRapCheck(t *testing.T) {
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer target.Close()
	srv, err := newServer()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	tools := httptest.NewServer(srv)
	defer tools.Close()

	args, _ := json.Marshal(map[string]any{"url": target.URL, "interval_seconds": 0.01, "timeout_seconds": 30})
	rep, err := rapcheck.Run(context.Background(), rapcheck.Config{Base: tools.URL, Timeout: 20 * time.Second,
		Probes: map[string]json.RawMessage{"wait_for_url": args}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Print(&out)
	for _, r := range rep.Results {
		if r.Status != rapcheck.Pass {
			t.Errorf("%s: %s %s", r.Check, r.Status, r.Detail)
		}
	}
	if !strings.Contains(out.String(), "probe wait_for_url     200, a subscription, 3 event(s), the last final") {
		t.Errorf("the probe did not see two progress events and a final one:\n%s", out.String())
	}
}
