// Command wait_for_url is a RAP tool server written with the public Go kit
// (package rapkit): its one tool polls a URL until it answers HTTP 200, then
// reports. It answers the call at once ("watching ..."; a subscription),
// sends a progress event into the thread after each failed poll, and a
// final event when the URL is up or the time is spent. The runtime can
// cancel it at any time. The same tool is written in TypeScript and Python
// beside it (examples/typescript, examples/python); docs/rapkit.md walks
// through all three.
//
//	go run ./examples/go/wait_for_url 9100
//	bin/agentslice serve -tool-server http://127.0.0.1:9100
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/agentslice/agentslice/rapkit"
)

var schema = json.RawMessage(`{
	"type": "object",
	"properties": {
		"url": {"type": "string", "pattern": "^https?://", "description": "the URL to poll"},
		"timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "default": 60},
		"interval_seconds": {"type": "number", "exclusiveMinimum": 0, "default": 2}
	},
	"required": ["url"],
	"additionalProperties": false
}`)

// poll GETs url once: "200" or what went wrong.
func poll(ctx context.Context, url string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Sprintf("unreachable (%v)", errors.Unwrap(err))
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return "200"
	}
	return fmt.Sprintf("HTTP %d", resp.StatusCode)
}

func waitForURL(ctx context.Context, c *rapkit.Call) error {
	a := struct {
		URL      string  `json:"url"`
		Timeout  float64 `json:"timeout_seconds"`
		Interval float64 `json:"interval_seconds"`
	}{Timeout: 60, Interval: 2}
	if err := c.Args(&a); err != nil {
		return err
	}
	interval := time.Duration(a.Interval * float64(time.Second))
	deadline := time.Now().Add(time.Duration(a.Timeout * float64(time.Second)))
	if err := c.Subscribe(ctx, "watching "+a.URL+"; progress follows"); err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		got := poll(ctx, a.URL)
		switch {
		case got == "200":
			return c.Event(ctx, fmt.Sprintf("%s returned 200 after %d attempts", a.URL, attempt), true, true)
		case time.Now().Add(interval).After(deadline):
			return c.Event(ctx, fmt.Sprintf("gave up on %s after %d attempts (last: %s)", a.URL, attempt, got), true, true)
		}
		if err := c.Event(ctx, fmt.Sprintf("attempt %d: %s; trying again in %gs", attempt, got, a.Interval), true, false); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil // cancelled: the runtime no longer wants the answer
		case <-time.After(interval):
		}
	}
}

// newServer is the tool server: one tool, its schema, its function.
func newServer() (*rapkit.Server, error) {
	return rapkit.NewServer(rapkit.ServerConfig{Name: "waiter", Description: "Waits for things to be ready", Tools: []rapkit.Tool{{
		Name:        "wait_for_url",
		Description: "Waits until a URL answers HTTP 200 and reports then, with progress on the way.",
		InputSchema: schema,
		Annotations: &rapkit.Annotations{ReadOnly: true, LongRunning: true},
		Run:         waitForURL,
	}}})
}

func main() {
	port := "9100"
	if len(os.Args) > 1 {
		port = os.Args[1]
	}
	srv, err := newServer()
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("LISTENING", ln.Addr().(*net.TCPAddr).Port)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
