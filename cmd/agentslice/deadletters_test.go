package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/server"
)

// fixableModel panics (failing its slices: the message is dead-lettered)
// until fixed.
type fixableModel struct{ fixed atomic.Bool }

func (m *fixableModel) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	if !m.fixed.Load() {
		panic("fixableModel: broken")
	}
	w.Text("ok")
	return nil
}

// TestDeadLettersCommand: the dead-letters subcommand lists a running
// serve's dead letters, redrives one (it becomes resolved) and deletes
// one; an unknown ID fails with the API's reason.
func TestDeadLettersCommand(t *testing.T) {
	t.Parallel()
	m := &fixableModel{}
	srv, err := server.New(context.Background(), server.Config{Listen: "127.0.0.1:0", Store: server.StoreMemory,
		Limits: server.Limits{SliceAttempts: 1}},
		server.Options{Model: m, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	for _, id := range []string{"m1", "m2"} {
		resp, err := http.Post(srv.URL()+"/threads/t-"+id+"/messages", "application/json", strings.NewReader(`{"text":"hi","id":"`+id+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	<-srv.System().Idle()
	cli := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"dead-letters", "-url", srv.URL()}, args...), &out, &errb)
		return out.String(), errb.String(), code
	}
	if out, errs, code := cli("list"); code != 0 || !strings.Contains(out, "open     t-m1 m1") || !strings.Contains(out, "open     t-m2 m2") {
		t.Fatalf("list: %d %q %q", code, out, errs)
	}
	m.fixed.Store(true)
	if out, errs, code := cli("redrive", "m1"); code != 0 || !strings.Contains(out, `"status": "redriven"`) {
		t.Fatalf("redrive: %d %q %q", code, out, errs)
	}
	<-srv.System().Idle()
	if out, errs, code := cli("delete", "m2"); code != 0 || !strings.Contains(out, "m2: discarded") {
		t.Fatalf("delete: %d %q %q", code, out, errs)
	}
	if out, _, code := cli("list"); code != 0 || !strings.Contains(out, "resolved t-m1 m1") || strings.Contains(out, "m2") {
		t.Fatalf("list after: %d %q", code, out)
	}
	if _, errs, code := cli("redrive", "nope"); code != 1 || !strings.Contains(errs, "no dead letter nope") {
		t.Fatalf("unknown ID: %d %q", code, errs)
	}
	if _, errs, code := cli("frobnicate"); code != 1 || !strings.Contains(errs, "unknown action") {
		t.Fatalf("bad action: %d %q", code, errs)
	}
}
