package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/agentslice/agentslice/client"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/server"
)

// TestForkAndVersionsAgainstServe: Fork, a pinned Send, AgentVersions and
// UpgradeAgent against a real in-process serve.
func TestForkAndVersionsAgainstServe(t *testing.T) {
	ctx := context.Background()
	srv, err := server.New(ctx, server.Config{Listen: "127.0.0.1:0", Script: "../internal/server/testdata/hello_script.json", Store: server.StoreMemory,
		Agents: []server.AgentConfig{{Agent: runtime.Agent{Name: "helper", Instructions: "Help."}}}},
		server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.New(srv.URL(), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, "thr_c", client.Message{Text: "Hi!", Upgrade: "pinned"}); err != nil {
		t.Fatal(err)
	}
	<-srv.System().Idle()
	th, err := c.Thread(ctx, "thr_c", 0)
	if err != nil || th.State.Upgrade != "pinned" || th.State.AgentHash == "" {
		t.Fatalf("thread %+v, %v", th, err)
	}
	f, err := c.Fork(ctx, "thr_c", 1, client.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ft, err := c.Thread(ctx, f.Thread, 0)
	if err != nil || ft.Inherited != 1 || ft.State.Fork == nil || ft.State.Fork.Thread != "thr_c" || ft.State.Upgrade != "pinned" {
		t.Fatalf("fork %+v, %v", ft, err)
	}
	var ae *client.APIError
	if _, err := c.Fork(ctx, "thr_c", 9, client.ForkOptions{}); !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Field != "at" {
		t.Fatalf("fork out of range: %v", err)
	}
	vs, err := c.AgentVersions(ctx, "helper")
	if err != nil || len(vs.Versions) != 1 || vs.Versions[0].Hash != th.State.AgentHash || vs.Versions[0].Pinned != 2 { // the thread and its fork
		t.Fatalf("versions %+v, %v", vs, err)
	}
	if err := c.UpgradeAgent(ctx, "thr_c", vs.Current); err != nil {
		t.Fatal(err)
	}
}
