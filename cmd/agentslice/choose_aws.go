package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// runChooseSQS answers the user_choice a thread of a deployment waits on,
// as serve's POST /threads/{id}/choices/{call} does: the pending choice is
// read from the thread's history in the deployment's database, the answer
// ({id, selected}) is POSTed to the tool's response_url from here, and a
// KindAnswer message goes to the thread's input queue (rap.AnswerChoice).
// Its authority is the caller's: connecting to the database (IAM for
// DSQL) and sending to the queue. Nothing in the stack serves it.
func runChooseSQS(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("choose", "choose --queue-url URL (--dsql-endpoint HOST [--user ROLE] | --dsn DSN) [--background-queue-url URL] [--call ID] THREAD CHOICE  (CHOICE: its number, or its text)", stderr)
	var a awsFlags
	a.register(fs)
	queueURL := fs.String("queue-url", "", "URL of the deployment's FIFO input queue (required)")
	bgURL := fs.String("background-queue-url", "", "URL of the background FIFO input queue (output BackgroundQueueUrl; needed for a background thread)")
	dsn := fs.String("dsn", "", "PostgreSQL connection string of the history database (local stand-ins)")
	endpoint := fs.String("dsql-endpoint", "", "Aurora DSQL cluster endpoint host name (IAM authentication)")
	user := fs.String("user", "admin", "DSQL database role to read the thread as")
	call := fs.String("call", "", "the tool call whose choice to answer (default: the call the thread waits on)")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	switch {
	case *queueURL == "":
		return errors.New("--queue-url is required (the stack's input queue URL)")
	case (*dsn == "") == (*endpoint == ""):
		return errors.New("set exactly one of --dsql-endpoint (the stack's history database) and --dsn (PostgreSQL)")
	case fs.NArg() != 2:
		return usagef("want THREAD CHOICE after the flags, got %d arguments", fs.NArg())
	}
	thread, pick := fs.Arg(0), fs.Arg(1)
	client, done, err := a.sqsClient(ctx)
	if err != nil {
		return err
	}
	defer done()
	store, closeDB, err := openHistory(ctx, a, *dsn, *endpoint, *user)
	if err != nil {
		return err
	}
	defer closeDB()

	th, err := store.Load(ctx, thread)
	if err != nil {
		return fmt.Errorf("loading thread %s: %w", thread, err)
	}
	if *call == "" && th.State.Pending != nil {
		*call = th.State.Pending.ID
	}
	ch, ok := rap.PendingChoiceOf(th, *call)
	if !ok {
		return conflictf("thread %s waits for no choice%s", thread, onCall(*call))
	}
	n, err := pickChoice(pick, ch.Prompt, ch.Choices)
	if err != nil {
		return err
	}
	if th.State.Class == runtime.ClassBackground && *bgURL == "" {
		return fmt.Errorf("thread %s is a background thread: pass --background-queue-url (the stack's BackgroundQueueUrl output)", thread)
	}
	q, err := sqsq.NewClassQueues(client, sqsq.QueueConfig{URL: *queueURL}, *bgURL)
	if err != nil {
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	if _, err := rap.AnswerLoaded(ctx, hc, th, q, *call, n, rap.RetryPolicy{}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "chose [%d] %s\n", n, ch.Choices[n])
	return nil
}

func onCall(call string) string {
	if call == "" {
		return ""
	}
	return fmt.Sprintf(" on call %q", call)
}
