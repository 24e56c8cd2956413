package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentslice/agentslice/client"
	"github.com/agentslice/agentslice/internal/server"
)

// The serve commands (threads, send, tail) talk to a serve through the
// public client: the one -server (or $AGENTSLICE_SERVER) names, else the
// local daemon of the data directory, started when none runs.

// ServerEnv names the server the serve commands talk to when -server is
// not given.
const ServerEnv = "AGENTSLICE_SERVER"

// serverFlags are the flags every serve command takes.
type serverFlags struct {
	server, data string
	// daemonArgs are serve flags a daemon started by connect gets.
	daemonArgs []string
}

func (f *serverFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", "", "base `URL` of the serve to talk to (default: with -data that directory's daemon, else $"+ServerEnv+", else the default data directory's daemon; a daemon is started if none runs); the bearer token comes from $"+server.TokenEnv)
	fs.StringVar(&f.data, "data", "", "data `directory` of the local daemon (default $"+server.DataDirEnv+", else $XDG_DATA_HOME/agentslice, else ~/.local/share/agentslice)")
}

// connect returns a client of the server, starting the local daemon when
// no server is named and none runs (saying so on stderr), and a function
// to call when done.
func (f *serverFlags) connect(ctx context.Context, stderr io.Writer) (*client.Client, func(), error) {
	token := os.Getenv(server.TokenEnv)
	base := f.server
	if base == "" && f.data == "" { // an explicit -data beats the environment
		base = os.Getenv(ServerEnv)
	}
	if base == "" {
		dir := dataDir(f.data)
		info, stale, err := findDaemon(ctx, dir, token)
		if errors.Is(err, errNoDaemon) {
			if stale {
				fmt.Fprintf(stderr, "agentslice: removed the stale daemon file of pid %d\n", info.PID)
			}
			if info, err = startDaemon(ctx, dir, "127.0.0.1:0", token, f.daemonArgs); err != nil {
				return nil, nil, err
			}
			fmt.Fprintf(stderr, "agentslice: started the daemon at %s (pid %d, data %s, log %s; `agentslice daemon stop` ends it)\n",
				info.URL, info.PID, dir, filepath.Join(dir, daemonLogName))
		} else if err != nil {
			return nil, nil, err
		}
		base = info.URL
	}
	c, err := client.New(base, token)
	if err != nil {
		return nil, nil, usagef("-server: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// A command makes a few requests: no keep-alive. (With it, the tests saw
	// the server's graceful stop wait 5 s at times, the grace net/http gives
	// a connection that has not sent a request yet.)
	tr.DisableKeepAlives = true
	c.HTTPClient = &http.Client{Transport: tr} // no overall timeout: event streams last
	return c, tr.CloseIdleConnections, nil
}

// sqsForm reports whether args select the SQS form of send or tail: they
// set one of these flags.
func sqsForm(args []string, names ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") {
			for _, n := range names {
				if name == n {
					return true
				}
			}
		}
	}
	return false
}

const formsNote = "Two forms: with -queue-url (send: or -thread) it speaks to a deployment's SQS queues;\n" +
	"otherwise to a serve: -server URL, $" + ServerEnv + ", else the local daemon (started if none runs)."

// runThreads lists a serve's threads.
func runThreads(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("threads", "threads [-server URL] [-status S] [-agent A] [-q TEXT] [-limit N] [-cursor C] [-json]", stderr)
	var sf serverFlags
	sf.register(fs)
	var opts client.ListOptions
	fs.IntVar(&opts.Limit, "limit", 0, "list at most N threads (passed to the server)")
	fs.StringVar(&opts.Cursor, "cursor", "", "continue a listing where the previous page ended (its next cursor)")
	fs.StringVar(&opts.Status, "status", "", "only threads with this status (running, idle, watching, waiting_for_choice, ...; passed to the server)")
	fs.StringVar(&opts.Agent, "agent", "", "only threads of this agent (passed to the server)")
	fs.StringVar(&opts.Query, "q", "", "only threads matching this text (passed to the server)")
	asJSON := fs.Bool("json", false, "print the server's answer as JSON")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case opts.Limit < 0:
		return usagef("-limit %d is negative", opts.Limit)
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	l, err := c.Threads(ctx, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(l)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "THREAD\tSTATUS\tAGENT\tLAST ACTIVITY\tITEMS\tTITLE")
	var walk func(ts []client.ThreadSummary, depth int)
	walk = func(ts []client.ThreadSummary, depth int) {
		for _, t := range ts {
			last := "-"
			if t.LastActivity != nil {
				last = t.LastActivity.Local().Format(time.DateTime)
			}
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%d\t%s\n", strings.Repeat("  ", depth), t.ID, t.Status, orDash(t.Agent), last, t.Length, t.Title)
			walk(t.Children, depth+1)
		}
	}
	walk(l.Threads, 0)
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.NextCursor != "" {
		fmt.Fprintf(stderr, "more threads: -cursor %s\n", l.NextCursor)
	} else if l.Truncated {
		fmt.Fprintf(stderr, "the server listed only the first %d threads\n", l.Count)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runSend sends a message: to a serve, or with -queue-url or -thread to a
// deployment's input queue (runSendSQS).
func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if sqsForm(args, "queue-url", "thread") {
		return runSendSQS(ctx, args, stdout, stderr)
	}
	fs := newFlagSet("send", "send [-server URL] [-agent NAME] [-wait] THREAD [TEXT...]  (no TEXT: read it from stdin)\n"+
		"   or: agentslice send -queue-url URL -thread ID ... TEXT...  (a deployment: agentslice send -queue-url URL -h)\n\n"+formsNote, stderr)
	var sf serverFlags
	sf.register(fs)
	var m client.Message
	fs.StringVar(&m.Agent, "agent", "", "agent a new thread runs as (default: the server's default agent); on an existing thread, the one it runs as")
	fs.StringVar(&m.ID, "id", "", "message ID, stable across retries of this send (default: the server's, printed)")
	fs.StringVar(&m.UserID, "user", "", "user ID recorded with the message")
	fs.StringVar(&m.Class, "class", "", "priority class of a new thread: interactive (default) or background")
	wait := fs.Bool("wait", false, "wait for the turn to end and print the agent's reply instead of the message ID")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if fs.NArg() == 0 {
		return usagef("missing THREAD: say which thread to send to (a new ID starts a thread)")
	}
	thread := fs.Arg(0)
	m.Text = strings.Join(fs.Args()[1:], " ")
	if fs.NArg() == 1 {
		b, err := io.ReadAll(stdinReader)
		if err != nil {
			return fmt.Errorf("reading the message from stdin: %w", err)
		}
		m.Text = strings.TrimRight(string(b), "\n")
	}
	if strings.TrimSpace(m.Text) == "" {
		return usagef("the message text is missing: put it after THREAD or on stdin")
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	if !*wait {
		acc, err := c.Send(ctx, thread, m)
		if err != nil {
			return explain(err, thread)
		}
		fmt.Fprintln(stdout, acc.ID)
		return nil
	}
	return sendAndWait(ctx, c, thread, m, stdout, stderr)
}

// stdinReader is where send reads a message without TEXT (tests set it).
var stdinReader io.Reader = os.Stdin

// explain adds what the command line can say to an API error: a 404 or
// a 409 names the thread when the server's message does not.
func explain(err error, thread string) error {
	var ae *client.APIError
	if errors.As(err, &ae) && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusConflict) && !strings.Contains(ae.Message, thread) {
		return fmt.Errorf("thread %s: %w", thread, err)
	}
	return err
}

// sendAndWait sends m with the thread's event stream open from its current
// end, and prints the assistant's turns until the thread comes to rest
// after consuming the message (idle, closed, waiting for a choice).
func sendAndWait(ctx context.Context, c *client.Client, thread string, m client.Message, stdout, stderr io.Writer) error {
	own := 0
	th, err := c.Thread(ctx, thread, math.MaxInt32) // no items: only where the history ends
	switch {
	case err == nil:
		own = th.Own()
	case !client.IsNotFound(err):
		return explain(err, thread)
	}
	stream, err := c.Events(ctx, thread, client.EventOptions{After: own, Resume: true})
	if err != nil {
		return err
	}
	defer stream.Close()
	acc, err := c.Send(ctx, thread, m)
	if err != nil {
		return explain(err, thread)
	}
	consumed := false
	var choice *client.Choice
	for {
		ev, err := stream.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("the event stream of thread %s ended before the turn did (message %s was accepted): %w", thread, acc.ID, err)
		}
		switch ev.Kind {
		case "message":
			if ev.Input == acc.ID {
				consumed = true
			}
		case "turn":
			if consumed && ev.Text != "" {
				fmt.Fprintln(stdout, ev.Text)
			}
		case "user_choice":
			if consumed {
				choice = ev.Choice
			}
		case "error":
			fmt.Fprintf(stderr, "agentslice send: %s: %s\n", thread, ev.Text)
		case "dead_letter":
			if ev.Input == acc.ID {
				return fmt.Errorf("message %s was set aside as a dead letter: %s", acc.ID, ev.Text)
			}
		case "state":
			if !consumed || ev.State == nil {
				continue
			}
			switch ev.State.Status {
			case "idle", "watching", "closed", "failed":
				return nil
			case "waiting_for_choice":
				if choice == nil { // the status can come before the user_choice event: ask
					if th, err := c.Thread(ctx, thread, math.MaxInt32); err == nil {
						choice = th.Choice
					}
				}
				if choice != nil {
					fmt.Fprintf(stdout, "%s\n", choice.Prompt)
					for i, ch := range choice.Choices {
						fmt.Fprintf(stdout, "  [%d] %s\n", i, ch)
					}
				}
				fmt.Fprintf(stderr, "agentslice send: thread %s waits for a choice\n", thread)
				return nil
			}
		}
	}
}

// runTail follows a thread of a serve, or with -queue-url a deployment's
// output queue (runTailSQS).
func runTail(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if sqsForm(args, "queue-url") {
		return runTailSQS(ctx, args, stdout, stderr)
	}
	fs := newFlagSet("tail", "tail [-server URL] [-after N] [-n N] [-json] [-deltas] THREAD\n"+
		"   or: agentslice tail -queue-url URL [-n N] [-json]  (a deployment: agentslice tail -queue-url URL -h)\n\n"+formsNote, stderr)
	var sf serverFlags
	sf.register(fs)
	after := fs.Int("after", -1, "resume after this event cursor (an event's seq, the SSE id); default: the whole history, then live")
	n := fs.Int("n", 0, "stop after printing N events (0: until interrupted)")
	asJSON := fs.Bool("json", false, "print each event as the JSON the server sent")
	deltas := fs.Bool("deltas", false, "also print the model's streamed text (delta events)")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	switch {
	case fs.NArg() == 0:
		return usagef("missing THREAD: say which thread to follow (or pass -queue-url to follow a deployment's output queue)")
	case fs.NArg() > 1:
		return usagef("unexpected argument %q (tail follows one thread)", fs.Arg(1))
	case *n < 0:
		return usagef("-n %d is negative", *n)
	case *after < -1:
		return usagef("-after %d is negative", *after)
	}
	thread := fs.Arg(0)
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	opts := client.EventOptions{}
	if *after >= 0 {
		opts = client.EventOptions{After: *after, Resume: true}
	}
	printed := 0
	for {
		stream, err := c.Events(ctx, thread, opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return explain(err, thread)
		}
		err = tailStream(stream, stdout, *asJSON, *deltas, *n, &printed)
		last := stream.LastSeq
		stream.Close()
		switch {
		case ctx.Err() != nil || err == nil:
			return nil
		case errors.Is(err, client.ErrDropped):
			if last > 0 || opts.Resume {
				opts = client.EventOptions{After: max(last, opts.After), Resume: true}
			}
			fmt.Fprintf(stderr, "agentslice tail: the server dropped the stream (it fell behind); resuming after %d\n", opts.After)
		case errors.Is(err, io.EOF):
			return fmt.Errorf("the server ended the stream (stopping?); resume with -after %d", max(last, opts.After))
		default:
			return err
		}
	}
}

// tailStream prints a stream's events until limit were printed (nil) or
// the stream fails.
func tailStream(s *client.Stream, out io.Writer, asJSON, deltas bool, limit int, printed *int) error {
	for limit == 0 || *printed < limit {
		ev, err := s.Next()
		if err != nil {
			return err
		}
		if asJSON {
			fmt.Fprintln(out, string(ev.Raw))
			*printed++
			continue
		}
		line, ok := formatEvent(ev, deltas)
		if !ok {
			continue
		}
		fmt.Fprintln(out, line)
		*printed++
	}
	return nil
}

// formatEvent renders an event as one readable line (continued lines
// indented); ok is false for events not worth a line (replies repeat their
// turn, deltas unless asked for).
// formatView is a view event for tail: a running command's new output
// (the sandbox's view, "sandbox_command") as lines, its end as its status;
// any other view as its type and content.
func formatView(text string) string {
	var v struct {
		ViewType string          `json:"view_type"`
		Content  json.RawMessage `json:"content"`
	}
	if json.Unmarshal([]byte(text), &v) != nil {
		return "view: " + text
	}
	var cmd struct {
		CommandID string `json:"command_id"`
		State     string `json:"state"`
		Status    string `json:"status"`
		Output    string `json:"output"`
	}
	if v.ViewType != "sandbox_command" || json.Unmarshal(v.Content, &cmd) != nil || cmd.CommandID == "" {
		return "view " + v.ViewType + ": " + string(v.Content)
	}
	s := "output " + cmd.CommandID + ":\n" + strings.TrimRight(cmd.Output, "\n")
	if cmd.State == "exited" {
		s += "\ncommand " + cmd.CommandID + " exited: " + cmd.Status
	}
	return s
}

func formatEvent(ev client.Event, deltas bool) (string, bool) {
	var s string
	switch ev.Kind {
	case "message":
		s = "user: " + ev.Text
	case "turn":
		if ev.Text == "" {
			return "", false // a turn that only calls tools: its calls follow
		}
		s = "assistant: " + ev.Text
	case "tool_call", "sleep":
		s = fmt.Sprintf("%s %s %s", ev.Kind, ev.Tool, ev.Args)
	case "tool_result", "wake", "late_result":
		state := "ok"
		if ev.IsError {
			state = "failed"
		}
		s = fmt.Sprintf("%s %s (%s): %s", ev.Kind, ev.Tool, state, ev.Text)
	case "state":
		if ev.State == nil {
			return "", false
		}
		s = "state: " + ev.State.Status
		if ev.State.Reason != "" {
			s += " (" + ev.State.Reason + ")"
		}
	case "usage":
		if ev.Usage == nil {
			return "", false
		}
		s = fmt.Sprintf("usage: %d input (%d cached), %d output tokens", ev.Usage.Input, ev.Usage.Cached, ev.Usage.Output)
	case "user_choice":
		s = "user_choice"
		if c := ev.Choice; c != nil {
			s += ": " + c.Prompt
			for i, ch := range c.Choices {
				s += fmt.Sprintf(" [%d] %s", i, ch)
			}
		}
	case "delta":
		if !deltas {
			return "", false
		}
		s = "delta: " + ev.Text
	case "reply":
		return "", false
	case "view":
		s = formatView(ev.Text)
	default:
		s = ev.Kind
		if ev.Child != "" {
			s += " " + ev.Child
		}
		if ev.Text != "" {
			s += ": " + ev.Text
		}
	}
	return strings.ReplaceAll(strings.TrimRight(s, " "), "\n", "\n  "), true
}
