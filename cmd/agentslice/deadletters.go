package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/server"
)

// runDeadLetters lists, redrives or discards the dead letters of a running
// `agentslice serve` through its API:
//
//	agentslice dead-letters [-url U] list
//	agentslice dead-letters [-url U] [-thread T] redrive ID
//	agentslice dead-letters [-url U] [-thread T] delete ID
func runDeadLetters(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dead-letters", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", "http://"+server.DefaultListen, "the serve API's base URL")
	thread := fs.String("thread", "", "the thread of the message, when its ID is a dead letter of several threads")
	token := fs.String("token", "", "the API's bearer token (default: $"+server.TokenEnv+")")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: agentslice dead-letters [flags] list | redrive ID | delete ID")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if *token == "" {
		*token = os.Getenv(server.TokenEnv)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fs.Usage()
		return fmt.Errorf("missing the action: list, redrive ID or delete ID")
	}
	var method, path string
	switch action := rest[0]; {
	case action == "list" && len(rest) == 1:
		method, path = http.MethodGet, "/dead_letters"
	case (action == "redrive" || action == "delete") && len(rest) == 2 && rest[1] != "":
		path = "/dead_letters/" + url.PathEscape(rest[1])
		method = http.MethodDelete
		if action == "redrive" {
			method, path = http.MethodPost, path+"/redrive"
		}
		if *thread != "" {
			path += "?thread=" + url.QueryEscape(*thread)
		}
	default:
		fs.Usage()
		return fmt.Errorf("unknown action %q (want list, redrive ID or delete ID)", strings.Join(rest, " "))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(*base, "/")+path, nil)
	if err != nil {
		return fmt.Errorf("-url %q: %w", *base, err)
	}
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, req.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s: %s", resp.Status, e.Error)
		}
		return fmt.Errorf("%s %s: %s", method, req.URL, resp.Status)
	}
	if method == http.MethodGet {
		return printDeadLetters(stdout, body)
	}
	if len(body) == 0 {
		fmt.Fprintf(stdout, "%s: discarded\n", rest[1])
		return nil
	}
	var out bytes.Buffer
	if json.Indent(&out, body, "", "  ") != nil {
		out.Reset()
		out.Write(body)
	}
	fmt.Fprintln(stdout, out.String())
	return nil
}

// printDeadLetters prints GET /dead_letters one entry a line: status,
// thread, message ID, when, reason.
func printDeadLetters(w io.Writer, body []byte) error {
	var list struct {
		DeadLetters []struct {
			Message struct {
				ID       string `json:"id"`
				ThreadID string `json:"thread_id"`
			} `json:"message"`
			Reason string    `json:"reason"`
			At     time.Time `json:"at"`
			Status string    `json:"status"`
		} `json:"dead_letters"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return fmt.Errorf("reading the dead letters: %w", err)
	}
	if len(list.DeadLetters) == 0 {
		fmt.Fprintln(w, "no dead letters")
		return nil
	}
	for _, d := range list.DeadLetters {
		fmt.Fprintf(w, "%-8s %s %s %s %s\n", d.Status, d.Message.ThreadID, d.Message.ID, d.At.UTC().Format(time.RFC3339), d.Reason)
	}
	return nil
}
