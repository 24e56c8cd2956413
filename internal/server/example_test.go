package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/agentslice/agentslice/internal/server"
)

// A configuration mistake names the field.
func ExampleDecodeConfig() {
	cfg, err := server.DecodeConfig([]byte(`{"mcp_servers": [{"name": "fs"}]}`))
	if err == nil {
		err = cfg.Validate()
	}
	fmt.Println(err)
	// Output: config: field "mcp_servers[0].command": set exactly one of command (a subprocess speaking stdio) and url (Streamable HTTP)
}

// Run a server, watch a thread's events, and send it a message.
func ExampleServer() {
	ctx := context.Background()
	srv, err := server.New(ctx, server.Config{Listen: "127.0.0.1:0", Script: "testdata/hello_script.json", Store: server.StoreMemory},
		server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := srv.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()

	sub, _ := srv.Events().Subscribe("thr_hello") // what GET /threads/thr_hello/events streams
	defer srv.Events().Unsubscribe(sub)
	resp, err := http.Post(srv.URL()+"/threads/thr_hello/messages", "application/json", strings.NewReader(`{"text": "Hi!", "id": "m1"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(resp.StatusCode, " ", string(body))
	for ev := range sub.Events() { // every step of the thread, as it happens
		if ev.Kind == "turn" {
			fmt.Println(ev.Kind+":", ev.Text)
			break
		}
	}
	// Output:
	// 202 {"id":"m1","thread_id":"thr_hello"}
	// turn: Hello from the scripted model.
}
