package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentslice/agentslice/rapkit/rapkittest"
)

// TestPassesRapCheck serves the example tool and runs `agentslice rap
// check`'s conformance suite against it (rapkittest.Check, as a tool of
// your own would), with a probe that waits for a URL answering 503 twice
// and then 200: every check passes, the probe's subscription ending with a
// final event after the target answered 200.
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
	rapkittest.Check(t, tools.URL, rapkittest.Probe("wait_for_url", string(args)), rapkittest.Timeout(20*time.Second))
	if n := hits.Load(); n != 3 {
		t.Errorf("the tool polled the target %d times, want 3 (two 503s, then the 200 it waited for)", n)
	}
}
