package server

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// brokenModel panics (its slices fail, so their messages are
// dead-lettered) until fixed, then replies "fixed".
type brokenModel struct{ fixed atomic.Bool }

func (m *brokenModel) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	if !m.fixed.Load() {
		panic("brokenModel: not fixed yet")
	}
	w.Text("fixed")
	return nil
}

func deadLetterStatus(t *testing.T, srv *Server) map[string]string {
	t.Helper()
	var dl deadLettersResponse
	if code := do(t, http.MethodGet, srv.URL()+"/dead_letters", "", &dl); code != http.StatusOK {
		t.Fatalf("GET /dead_letters: %d", code)
	}
	out := map[string]string{}
	for _, d := range dl.DeadLetters {
		out[d.Message.ThreadID+"/"+d.Message.ID] = d.Status
	}
	return out
}

// TestRedriveDeadLetters: dead letters survive a restart of the disk
// store; a redrive sends the message again with its ID and the entry
// becomes resolved once consumed (and survives another restart so); a
// message its client sent again is resolved too; a resolved entry is not
// redriven again (409); DELETE forgets an entry; an unknown ID is a 404.
func TestRedriveDeadLetters(t *testing.T) {
	t.Parallel()
	m := &brokenModel{}
	cfg := Config{Data: t.TempDir(), Limits: Limits{SliceAttempts: 2}}
	opts := Options{Model: m}
	srv := startServerOpts(t, cfg, opts)
	postMessage(t, srv, "r1", `{"text":"first","id":"m1"}`)
	postMessage(t, srv, "r2", `{"text":"second","id":"m2"}`)
	postMessage(t, srv, "r3", `{"text":"third","id":"m3"}`)
	waitIdle(t, srv)
	if got := deadLetterStatus(t, srv); got["r1/m1"] != "open" || got["r2/m2"] != "open" || got["r3/m3"] != "open" {
		t.Fatalf("dead letters %v, want three open", got)
	}
	srv.Stop()

	m.fixed.Store(true)
	srv = startServerOpts(t, cfg, opts)
	if got := deadLetterStatus(t, srv); len(got) != 3 || got["r1/m1"] != "open" {
		t.Fatalf("dead letters after a restart %v, want the three, open", got)
	}
	var rr redriveResponse
	if code := do(t, http.MethodPost, srv.URL()+"/dead_letters/m1/redrive", "", &rr); code != http.StatusAccepted || rr.ThreadID != "r1" {
		t.Fatalf("redrive: %d %+v", code, rr)
	}
	postMessage(t, srv, "r2", `{"text":"second","id":"m2"}`) // the client sends it again itself
	waitIdle(t, srv)
	got := deadLetterStatus(t, srv)
	if got["r1/m1"] != "resolved" || got["r2/m2"] != "resolved" || got["r3/m3"] != "open" {
		t.Fatalf("dead letters after the redrive %v, want m1 and m2 resolved, m3 open", got)
	}
	th := getThread(t, srv, "r1")
	if kinds(th.Items) != "user assistant" || th.Items[0].Input != "m1" || th.Items[1].Text != "fixed" {
		t.Fatalf("r1 after the redrive: %s %+v", kinds(th.Items), th.Items)
	}
	// A resolved entry is not redriven again; dedup holds anyway.
	var e apiError
	if code := do(t, http.MethodPost, srv.URL()+"/dead_letters/m1/redrive", "", &e); code != http.StatusConflict || e.Field != "id" {
		t.Fatalf("second redrive: %d %+v", code, e)
	}
	postMessage(t, srv, "r1", `{"text":"first","id":"m1"}`)
	waitIdle(t, srv)
	if th := getThread(t, srv, "r1"); kinds(th.Items) != "user assistant" {
		t.Fatalf("m1 sent again after its redrive was consumed: %s", kinds(th.Items))
	}
	if code := do(t, http.MethodDelete, srv.URL()+"/dead_letters/m3", "", nil); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	if code := do(t, http.MethodDelete, srv.URL()+"/dead_letters/m3", "", &e); code != http.StatusNotFound {
		t.Fatalf("DELETE of a discarded entry: %d", code)
	}
	if code := do(t, http.MethodPost, srv.URL()+"/dead_letters/nope/redrive", "", &e); code != http.StatusNotFound || e.Field != "id" {
		t.Fatalf("redrive of an unknown ID: %d %+v", code, e)
	}
	srv.Stop()

	srv = startServerOpts(t, cfg, opts)
	if got := deadLetterStatus(t, srv); len(got) != 2 || got["r1/m1"] != "resolved" || got["r2/m2"] != "resolved" {
		t.Fatalf("dead letters after another restart %v, want m1 and m2 resolved, m3 gone", got)
	}
}
