package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/agentslice/agentslice/client"
)

// runHistory prints a thread's status and history.
func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("history", "history [-server URL] [-from N] [-json] THREAD", stderr)
	var sf serverFlags
	sf.register(fs)
	from := fs.Int("from", 0, "skip the first N items (of the full view, ancestors' items included)")
	asJSON := fs.Bool("json", false, "print the server's answer as JSON")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	thread, err := oneThread(fs.Args(), "read")
	if err != nil {
		return err
	}
	if *from < 0 {
		return usagef("-from %d is negative", *from)
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	th, err := c.Thread(ctx, thread, *from)
	if err != nil {
		return explain(err, thread)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(th)
	}
	head := fmt.Sprintf("thread %s: %s, %d items", th.ID, th.Status, th.Total)
	if th.Reason != "" {
		head = fmt.Sprintf("thread %s: %s (%s), %d items", th.ID, th.Status, th.Reason, th.Total)
	}
	if th.State.Agent != "" {
		head += ", agent " + th.State.Agent
	}
	if u := th.State.Usage; u.Input+u.Output > 0 {
		head += fmt.Sprintf(", %d input and %d output tokens", u.Input, u.Output)
	}
	fmt.Fprintln(stdout, head)
	if line := budgetLine(th.Budget); line != "" {
		fmt.Fprintln(stdout, line)
	}
	for _, it := range th.Items {
		fmt.Fprintln(stdout, formatItem(it))
	}
	if ch := th.Choice; ch != nil {
		fmt.Fprintf(stdout, "waiting for a choice: %s\n", ch.Prompt)
		for i, o := range ch.Choices {
			fmt.Fprintf(stdout, "  [%d] %s\n", i, o)
		}
	}
	return nil
}

// formatItem renders a history item as tail renders its event.
func formatItem(it client.Item) string {
	var s string
	switch it.Kind {
	case "user":
		s = "user: " + it.Text
	case "assistant":
		s = "assistant: " + it.Text
	case "tool_call":
		s = fmt.Sprintf("tool_call %s %s", it.Name, it.Args)
	case "tool_result":
		state := "ok"
		if it.IsError {
			state = "failed"
		}
		s = fmt.Sprintf("tool_result %s (%s): %s", it.Name, state, it.Text)
	default:
		s = it.Kind + ": " + it.Text
	}
	return strings.ReplaceAll(strings.TrimRight(s, " "), "\n", "\n  ")
}

// oneThread reads the THREAD argument of a command that takes only it.
func oneThread(args []string, verb string) (string, error) {
	switch {
	case len(args) == 0:
		return "", usagef("missing THREAD: say which thread to %s", verb)
	case len(args) > 1:
		return "", usagef("unexpected argument %q (one THREAD only)", args[1])
	}
	return args[0], nil
}

// runStop and runClose stop a thread's work, or stop and close it.
func runStop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runControl(ctx, "stop", args, stdout, stderr)
}

func runClose(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runControl(ctx, "close", args, stdout, stderr)
}

func runControl(ctx context.Context, verb string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(verb, verb+" [-server URL] [-reason TEXT] THREAD", stderr)
	var sf serverFlags
	sf.register(fs)
	reason := fs.String("reason", "", "why, recorded in the thread's history")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	thread, err := oneThread(fs.Args(), verb)
	if err != nil {
		return err
	}
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	f := c.Stop
	if verb == "close" {
		f = c.Close
	}
	if err := f(ctx, thread, *reason); err != nil {
		return explain(err, thread)
	}
	past := map[string]string{"stop": "stopping", "close": "closing"}[verb]
	fmt.Fprintf(stdout, "%s thread %s\n", past, thread)
	return nil
}

// runChoose answers a thread's pending user_choice by index or by text.
func runChoose(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if sqsForm(args, "queue-url") {
		return runChooseSQS(ctx, args, stdout, stderr)
	}
	fs := newFlagSet("choose", "choose [-server URL] THREAD CHOICE  (CHOICE: its number, or its text)\n"+
		"   or: agentslice choose -queue-url URL (-dsql-endpoint HOST | -dsn DSN) THREAD CHOICE  (a deployment: agentslice choose -queue-url URL -h)", stderr)
	var sf serverFlags
	sf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if fs.NArg() != 2 {
		return usagef("want THREAD CHOICE, got %d arguments", fs.NArg())
	}
	thread, pick := fs.Arg(0), fs.Arg(1)
	c, done, err := sf.connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer done()
	th, err := c.Thread(ctx, thread, math.MaxInt32) // the state and the choice, no items
	if err != nil {
		return explain(err, thread)
	}
	ch := th.Choice
	if ch == nil {
		return conflictf("thread %s waits for no choice (it is %s)", thread, th.Status)
	}
	n, err := pickChoice(pick, ch.Prompt, ch.Choices)
	if err != nil {
		return err
	}
	if err := c.Choose(ctx, thread, ch.CallID, n); err != nil {
		return explain(err, thread)
	}
	fmt.Fprintf(stdout, "chose [%d] %s\n", n, ch.Choices[n])
	return nil
}

// pickChoice reads CHOICE: an option's number, or its text (any case).
func pickChoice(pick, prompt string, choices []string) (int, error) {
	n := -1
	if i, err := strconv.Atoi(pick); err == nil {
		n = i
	} else {
		for i, o := range choices {
			if strings.EqualFold(o, pick) {
				n = i
			}
		}
	}
	if n < 0 || n >= len(choices) {
		var opts []string
		for i, o := range choices {
			opts = append(opts, fmt.Sprintf("[%d] %s", i, o))
		}
		return 0, usagef("%q is not one of the choices of %q: %s", pick, prompt, strings.Join(opts, ", "))
	}
	return n, nil
}

// budgetLine says what a thread and its tree spent against their limits
// ("" when nothing was spent and no limit is set).
func budgetLine(b *client.Budget) string {
	if b == nil || (b.Spent.Tokens == 0 && b.Limit == nil && (b.Tree == nil || b.Tree.Limit == nil)) {
		return ""
	}
	s := "spent " + spendText(b.Spent, b.Limit)
	if t := b.Tree; t != nil && (t.Limit != nil || t.Root != "") {
		s += "; tree " + t.Root + " spent " + spendText(t.Spent, t.Limit)
	}
	if b.Waiting != "" {
		s += "; waiting for a person to raise the " + b.Waiting + " budget"
	}
	return s
}

func spendText(sp client.Spend, l *client.Limit) string {
	s := fmt.Sprintf("%d tokens, $%.4f", sp.Tokens, sp.USD)
	if l != nil {
		var parts []string
		if l.Tokens > 0 {
			parts = append(parts, fmt.Sprintf("%d tokens", l.Tokens))
		}
		if l.USD > 0 {
			parts = append(parts, fmt.Sprintf("$%.4g", l.USD))
		}
		if len(parts) > 0 {
			s += " of " + strings.Join(parts, " / ")
		}
	}
	return s
}
