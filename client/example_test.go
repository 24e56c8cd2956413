package client_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/agentslice/agentslice/client"
	"github.com/agentslice/agentslice/internal/server"
)

// Follow a thread's events while sending it a message, against a real
// in-process server playing a scripted model.
func Example() {
	ctx := context.Background()
	srv, err := server.New(ctx, server.Config{Listen: "127.0.0.1:0", Script: "../internal/server/testdata/hello_script.json", Store: server.StoreMemory},
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

	c, err := client.New(srv.URL(), "")
	if err != nil {
		fmt.Println(err)
		return
	}
	stream, err := c.Events(ctx, "thr_hello", client.EventOptions{Resume: true}) // live once it returns
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stream.Close()
	acc, err := c.Send(ctx, "thr_hello", client.Message{Text: "Hi!", ID: "m1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("accepted", acc.ID, "for", acc.ThreadID)
	for {
		ev, err := stream.Next()
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Kind == "turn" {
			fmt.Println("turn:", ev.Text)
			break
		}
	}
	th, err := c.Thread(ctx, "thr_hello", 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range th.Items {
		fmt.Println(it.Kind, it.Text)
	}
	_, err = c.Thread(ctx, "thr_nobody", 0)
	fmt.Println(client.IsNotFound(err), err)
	// Output:
	// accepted m1 for thr_hello
	// turn: Hello from the scripted model.
	// user Hi!
	// assistant Hello from the scripted model.
	// true 404 Not Found: thread thr_nobody has no history yet (field thread_id)
}
