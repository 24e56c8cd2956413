package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentslice/agentslice/client"
)

// parseWithThread parses flags given before or after the one THREAD
// argument (`fork THREAD -at 3` and `fork -at 3 THREAD` alike).
func parseWithThread(fs *flag.FlagSet, args []string, verb string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	rest := fs.Args()
	if len(rest) > 1 && strings.HasPrefix(rest[1], "-") {
		if err := parseFlags(fs, rest[1:]); err != nil {
			return "", err
		}
		rest = append([]string{rest[0]}, fs.Args()...)
	}
	return oneThread(rest, verb)
}

// runFork forks a thread of a serve at a position of its history and
// prints the new thread's ID.
func runFork(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("fork", "fork [-server URL] -at N [-id ID] [-agent NAME] [-model NAME] [-text MESSAGE] THREAD", stderr)
	var sf serverFlags
	sf.register(fs)
	at := fs.Int("at", -1, "how many of the thread's items the fork keeps (positions as `agentslice history` numbers them; required)")
	agent := fs.String("agent", "", "the agent the fork runs as (default: the thread's)")
	modelName := fs.String("model", "", "the model the fork runs (default: the thread's)")
	text := fs.String("text", "", "the fork's first message (default: none, the fork waits idle)")
	id := fs.String("id", "", "the fork's thread `ID`: run again with the same ID, the command prints the same fork instead of making another (default: a new ID)")
	thread, err := parseWithThread(fs, args, "fork")
	if err != nil {
		return ignoreHelp(err)
	}
	if *at < 0 {
		return errors.New("missing -at N: the position to fork at (the fork keeps the items before it)")
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	f, err := c.Fork(ctx, thread, *at, client.ForkOptions{Thread: *id, Agent: *agent, Model: *modelName, Text: *text})
	if err != nil {
		return explain(err, thread)
	}
	fmt.Fprintln(stdout, f.Thread)
	return nil
}

// replayTurn is one line of `agentslice replay`: a user message of the
// source thread, the reply it got, and the reply its fork got.
type replayTurn struct {
	Turn     int    `json:"turn"`
	At       int    `json:"at"`
	User     string `json:"user"`
	Original string `json:"original"`
	Replay   string `json:"replay"`
	Fork     string `json:"fork"`
	Status   string `json:"status"`
}

// runReplay forks a finished thread at every user message of its own
// history, sends the message again to the fork (on another model or agent)
// and prints, per turn, the original and the new reply as JSON lines.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("replay", "replay [-server URL] -model NAME [-agent NAME] THREAD", stderr)
	var sf serverFlags
	sf.register(fs)
	modelName := fs.String("model", "", "the model the replies are replayed on (required unless -agent is given)")
	agent := fs.String("agent", "", "the agent the replies are replayed as (default: the thread's)")
	thread, err := parseWithThread(fs, args, "replay")
	if err != nil {
		return ignoreHelp(err)
	}
	if *modelName == "" && *agent == "" {
		return errors.New("missing -model NAME (or -agent NAME): what the replies are replayed on")
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	src, err := c.Thread(ctx, thread, 0)
	if err != nil {
		return explain(err, thread)
	}
	switch src.Status {
	case "idle", "watching", "closed", "failed": // watching: its turns ended, a subscription goes on
	default:
		return fmt.Errorf("thread %s is %s: replay a finished thread (idle, watching, closed or failed)", thread, src.Status)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	turn := 0
	for p := src.Inherited; p < len(src.Items); p++ {
		it := src.Items[p]
		if it.Kind != "user" {
			continue
		}
		f, err := c.Fork(ctx, thread, p, client.ForkOptions{Agent: *agent, Model: *modelName})
		if err != nil {
			return fmt.Errorf("forking %s at %d: %w", thread, p, err)
		}
		if err := sendAndWait(ctx, c, f.Thread, client.Message{Text: it.Text}, io.Discard, stderr); err != nil {
			return fmt.Errorf("replaying turn %d in fork %s: %w", turn, f.Thread, err)
		}
		ft, err := c.Thread(ctx, f.Thread, p)
		if err != nil {
			return err
		}
		rt := replayTurn{Turn: turn, At: p, User: it.Text, Original: replies(src.Items[p+1:]), Fork: f.Thread, Status: ft.Status}
		if len(ft.Items) > 0 {
			rt.Replay = replies(ft.Items[1:])
		}
		if err := enc.Encode(rt); err != nil {
			return err
		}
		turn++
	}
	if turn == 0 {
		return fmt.Errorf("thread %s has no user message of its own to replay", thread)
	}
	return nil
}

// replies joins the assistant's texts of items up to the next user message.
func replies(items []client.Item) string {
	var out []string
	for _, it := range items {
		if it.Kind == "user" {
			break
		}
		if it.Kind == "assistant" && it.Text != "" {
			out = append(out, it.Text)
		}
	}
	return strings.Join(out, "\n")
}
