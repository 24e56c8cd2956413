package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// The deployment subcommands talk to a deployed stack: send and tail to its
// queues (credentials and region from the usual AWS sources: environment,
// shared config, SSO), migrate to its history database.

// awsFlags are the flags every queue subcommand takes.
type awsFlags struct {
	region, endpoint string
}

func (a *awsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.region, "region", "", "AWS region (default: AWS_REGION or the shared config)")
	fs.StringVar(&a.endpoint, "endpoint-url", "", "SQS endpoint, for local stand-ins (AWS_ENDPOINT_URL_SQS works too)")
}

// sqsClient returns an SQS client and a function that closes its idle
// connections, for the command to call when it is done.
func (a *awsFlags) sqsClient(ctx context.Context) (*sqs.Client, func(), error) {
	cfg, err := loadAWS(ctx, a.region)
	if err != nil {
		return nil, nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	cfg.HTTPClient = &http.Client{Transport: tr}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if a.endpoint != "" {
			o.BaseEndpoint = aws.String(a.endpoint)
		}
	}), tr.CloseIdleConnections, nil
}

func loadAWS(ctx context.Context, region string) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS region: pass --region or set AWS_REGION")
	}
	return cfg, nil
}

// parseFlags parses args; -h prints the usage and ends the command
// successfully (errHelp).
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	return nil
}

var errHelp = errors.New("help requested")

func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: agentslice %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// runSendSQS sends one user message to a thread on a deployment's FIFO input
// queue and prints the message ID.
func runSendSQS(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("send", "send --queue-url URL --thread ID [--agent NAME] [--id ID] [--user ID] [--background-queue-url URL [--class background | --dsql-endpoint HOST [--user-role ROLE] | --dsn DSN]] TEXT...", stderr)
	var a awsFlags
	a.register(fs)
	queueURL := fs.String("queue-url", "", "URL of the deployment's FIFO input queue (required)")
	thread := fs.String("thread", "", "thread to send to; a new ID starts a new conversation (required)")
	id := fs.String("id", "", "message ID, stable across retries of this send (default: a fresh random ID, printed)")
	user := fs.String("user", "", "user ID recorded with the message (optional)")
	class := fs.String("class", "", "priority class of a new thread: interactive (default) or background")
	bgURL := fs.String("background-queue-url", "", "URL of the background FIFO input queue (output BackgroundQueueUrl; needed with --class background)")
	agent := fs.String("agent", "", "agent a new thread runs as (default: the deployment's default agent); on an existing thread, the one it runs as")
	dsn := fs.String("dsn", "", "PostgreSQL connection string of the history database (local stand-ins): look an existing thread's class up when --class is not given")
	endpoint := fs.String("dsql-endpoint", "", "Aurora DSQL endpoint (output DsqlEndpoint): look an existing thread's class up when --class is not given, so a message to a background thread keeps its order")
	role := fs.String("user-role", "admin", "DSQL database role to look the class up as")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	text := strings.Join(fs.Args(), " ")
	switch {
	case *queueURL == "":
		return errors.New("--queue-url is required (the stack's input queue URL)")
	case *thread == "":
		return errors.New("--thread is required")
	case strings.TrimSpace(text) == "":
		return usagef("the message text is missing: put it after the flags")
	}
	cls, err := runtime.ParseClass(*class)
	if err != nil {
		return fmt.Errorf("--class: %w", err)
	}
	if cls == runtime.ClassBackground && *bgURL == "" {
		return errors.New("--class background needs --background-queue-url (the stack's BackgroundQueueUrl output)")
	}
	if *id == "" {
		*id = newMessageID()
	}
	if *class == "" {
		cls = "" // unnamed: the thread's own class (looked up below), interactive for a new thread
	}
	msg := runtime.Message{V: runtime.MessageVersion, ID: *id, ThreadID: *thread, Kind: runtime.KindUser, Text: text, UserID: *user,
		Agent: *agent, Class: cls}
	if err := msg.Validate(); err != nil {
		return err
	}
	client, done, err := a.sqsClient(ctx)
	if err != nil {
		return err
	}
	defer done()
	q, err := sqsq.NewClassQueues(client, sqsq.QueueConfig{URL: *queueURL}, *bgURL)
	if err != nil {
		return err
	}
	switch {
	case *class != "" || *bgURL == "":
	case *dsn != "" || *endpoint != "":
		store, closeDB, err := openHistory(ctx, a, *dsn, *endpoint, *role)
		if err != nil {
			return err
		}
		defer closeDB()
		q.WithClassLookup(store, 1)
	default:
		fmt.Fprintln(stderr, "note: no --class and no --dsql-endpoint: the message goes to the interactive queue; to an existing background thread it would leave the order of the thread's other messages")
	}
	if err := q.Send(ctx, msg); err != nil {
		return err
	}
	fmt.Fprintln(stdout, msg.ID)
	return nil
}

// openHistory connects to a deployment's history database: PostgreSQL
// (dsn) or DSQL (endpoint, as role, IAM authentication).
func openHistory(ctx context.Context, a awsFlags, dsn, endpoint, role string) (*dsql.Store, func(), error) {
	if (dsn == "") == (endpoint == "") {
		return nil, nil, errors.New("set exactly one of --dsql-endpoint (the stack's history database) and --dsn (PostgreSQL)")
	}
	cfg := dsql.Config{Dialect: dsql.Postgres, DSN: dsn}
	if endpoint != "" {
		awsCfg, err := loadAWS(ctx, a.region)
		if err != nil {
			return nil, nil, err
		}
		cfg = dsql.Config{Dialect: dsql.DSQL, Endpoint: endpoint, Region: awsCfg.Region, User: role, Credentials: awsCfg.Credentials}
	}
	pool, err := dsql.NewPool(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return dsql.New(pool, dsql.Options{}), pool.Close, nil
}

func newMessageID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return "msg_" + hex.EncodeToString(b[:])
}

func ignoreHelp(err error) error {
	if errors.Is(err, errHelp) {
		return nil
	}
	return err
}

// runTailSQS long-polls a deployment's output queue, prints each agent reply
// as it arrives and deletes it.
func runTailSQS(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("tail", "tail --queue-url URL [-n N] [--json]", stderr)
	var a awsFlags
	a.register(fs)
	queueURL := fs.String("queue-url", "", "URL of the deployment's output queue (required)")
	n := fs.Int("n", 0, "stop after printing N events (0: until interrupted)")
	wait := fs.Int("wait", 20, "long-poll wait in seconds (1..20)")
	asJSON := fs.Bool("json", false, "print each event as its JSON record")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	switch {
	case *queueURL == "":
		return errors.New("--queue-url is required (the stack's output queue URL)")
	case *n < 0:
		return usagef("-n %d is negative", *n)
	case *wait < 1 || *wait > 20:
		return fmt.Errorf("--wait %d is outside 1..20 seconds", *wait)
	}
	client, done, err := a.sqsClient(ctx)
	if err != nil {
		return err
	}
	defer done()
	t := &tailer{api: client, url: *queueURL, wait: int32(*wait), json: *asJSON, out: stdout, errOut: stderr, seen: newRecent(10000)}
	return t.run(ctx, *n)
}

// tailAPI is the part of *sqs.Client tail uses.
type tailAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

type tailer struct {
	api         tailAPI
	url         string
	wait        int32
	json        bool
	out, errOut io.Writer
	seen        *recent
}

// run prints events until limit were printed (0: no limit) or ctx ends.
// The output queue is a standard queue: it may deliver an event twice, so
// events are printed once per ID.
func (t *tailer) run(ctx context.Context, limit int) error {
	printed := 0
	for limit == 0 || printed < limit {
		max := int32(10)
		if limit > 0 && limit-printed < 10 {
			max = int32(limit - printed) // never receive what we will not print
		}
		out, err := t.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(t.url),
			MaxNumberOfMessages: max, WaitTimeSeconds: t.wait})
		if err != nil {
			if ctx.Err() != nil {
				return nil // interrupted
			}
			return fmt.Errorf("receiving from %s: %w", t.url, err)
		}
		var done []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			body := aws.ToString(m.Body)
			ev, err := sqsq.DecodeOutput(body)
			switch {
			case err != nil:
				fmt.Fprintf(t.errOut, "agentslice tail: skipping and deleting a malformed record %s: %v\n  body: %.500s\n", aws.ToString(m.MessageId), err, body)
			case t.seen.add(ev.ID):
				t.print(ev, body)
				printed++
			}
			done = append(done, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if len(done) > 0 {
			// Delete even when ctx was cancelled meanwhile: what was
			// printed must not come back.
			dctx := context.WithoutCancel(ctx)
			res, err := t.api.DeleteMessageBatch(dctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(t.url), Entries: done})
			if err != nil {
				return fmt.Errorf("deleting %d printed records from %s: %w", len(done), t.url, err)
			}
			for _, f := range res.Failed {
				fmt.Fprintf(t.errOut, "agentslice tail: could not delete a printed record (it may be printed again): %s: %s\n",
					aws.ToString(f.Code), aws.ToString(f.Message))
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	return nil
}

func (t *tailer) print(ev runtime.OutputEvent, body string) {
	if t.json {
		fmt.Fprintln(t.out, body)
		return
	}
	who := ev.Kind
	if ev.Agent != "" {
		who = ev.Agent + " " + ev.Kind
	}
	fmt.Fprintf(t.out, "[%s] %s: %s\n", ev.ThreadID, who, ev.Text)
	if u := ev.Usage; u != nil {
		fmt.Fprintf(t.out, "[%s] usage so far: %d input (%d cache read, %d cache write), %d output tokens\n",
			ev.ThreadID, u.Input, u.Cached, u.CacheWrite, u.Output)
	}
}

// recent remembers the last n IDs added.
type recent struct {
	ids  map[string]bool
	ring []string
	next int
}

func newRecent(n int) *recent { return &recent{ids: make(map[string]bool, n), ring: make([]string, n)} }

// add records id and reports whether it was new.
func (r *recent) add(id string) bool {
	if r.ids[id] {
		return false
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.ids, old)
	}
	r.ring[r.next] = id
	r.ids[id] = true
	r.next = (r.next + 1) % len(r.ring)
	return true
}

// runMigrate creates or upgrades the history schema.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", "migrate (--dsn DSN | --dsql-endpoint HOST [--region R] [--user ROLE] [--app-role-arn ARN] [--receiver-role-arn ARN] [--agents FILE]) [--backfill]", stderr)
	dsn := fs.String("dsn", "", "PostgreSQL connection string (local development and tests)")
	endpoint := fs.String("dsql-endpoint", "", "Aurora DSQL cluster endpoint host name (IAM authentication)")
	region := fs.String("region", "", "the DSQL cluster's region (default: AWS_REGION or the shared config)")
	user := fs.String("user", "admin", "DSQL database role")
	appARN := fs.String("app-role-arn", "", "the slice function's IAM role (stack output SliceRoleArn): create the least-privilege database role "+dsql.AppRole+" and let that IAM role connect as it (DSQL); with --dsn, only the database role and its grants")
	agentsFile := fs.String("agents", "", "an agents document (deploy/agents.json): store its definitions beside history, keeping the earlier versions, so pinned threads go on with theirs (run it with every deploy)")
	appRole := fs.String("app-role", "", "create the least-privilege database role even without --app-role-arn (PostgreSQL); default "+dsql.AppRole+" when --app-role-arn is set")
	readerARN := fs.String("receiver-role-arn", "", "the callback receiver's IAM role (stack output ReceiverRoleArn): create the database role "+dsql.ReaderRole+" (SELECT on the thread rows only, to look up thread classes) and let that IAM role connect as it (DSQL)")
	readerRole := fs.String("receiver-role", "", "create the receiver's database role even without --receiver-role-arn (PostgreSQL); default "+dsql.ReaderRole+" when --receiver-role-arn is set")
	backfill := fs.Bool("backfill", false, "after the schema, record the input of the items of threads written before schema version 5, so that their slices load from the compaction point instead of whole (run it once every slice function runs this version; it resumes where an interrupted run stopped)")
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	var cfg dsql.Config
	switch {
	case (*dsn == "") == (*endpoint == ""):
		return errors.New("set exactly one of --dsn (PostgreSQL) and --dsql-endpoint (Aurora DSQL)")
	case *dsn != "":
		cfg = dsql.Config{Dialect: dsql.Postgres, DSN: *dsn}
	default:
		awsCfg, err := loadAWS(ctx, *region)
		if err != nil {
			return err
		}
		cfg = dsql.Config{Dialect: dsql.DSQL, Endpoint: *endpoint, Region: awsCfg.Region, User: *user, Credentials: awsCfg.Credentials}
	}
	pool, err := dsql.NewPool(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := dsql.Migrate(ctx, pool, cfg.Dialect); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schema is at version %d (%s)\n", dsql.SchemaVersion(), cfg.Dialect)
	if *backfill {
		rep, err := dsql.Backfill(ctx, pool, dsql.BackfillOptions{Progress: func(r dsql.BackfillReport) {
			if r.Threads%1000 == 0 {
				fmt.Fprintf(stderr, "backfill: %d threads so far (%d item inputs)\n", r.Threads, r.Items)
			}
		}})
		if err != nil {
			return fmt.Errorf("%w (run migrate --backfill again: it goes on from there)", err)
		}
		fmt.Fprintf(stdout, "backfill: %d threads now load from their compaction point (%d item inputs recorded in %d transactions)\n",
			rep.Threads, rep.Items, rep.Batches)
		if len(rep.Changing) > 0 {
			fmt.Fprintf(stdout, "backfill: %d threads kept changing and were left as they were (a writer of an older version still runs?): %s; run migrate --backfill again\n",
				len(rep.Changing), strings.Join(rep.Changing, ", "))
		}
	}
	if *agentsFile != "" {
		if err := storeAgentVersions(ctx, dsql.New(pool, dsql.Options{}), *agentsFile, stdout); err != nil {
			return err
		}
	}
	roles := []struct {
		arn, role, def, what string
		grant                func(context.Context, dsql.DB, dsql.Dialect, string, string) error
	}{
		{*appARN, *appRole, dsql.AppRole, "may run the store's DML", dsql.GrantAppRole},
		{*readerARN, *readerRole, dsql.ReaderRole, "may read the thread rows", dsql.GrantReaderRole},
	}
	for _, r := range roles {
		if r.arn == "" && r.role == "" {
			continue
		}
		role := r.role
		if role == "" {
			role = r.def
		}
		if err := r.grant(ctx, pool, cfg.Dialect, role, r.arn); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "database role %s %s", role, r.what)
		if cfg.Dialect == dsql.DSQL {
			fmt.Fprintf(stdout, "; %s connects as it", r.arn)
		}
		fmt.Fprintln(stdout)
	}
	return nil
}

// storeAgentVersions stores the definitions of an agents document as
// versions (kept ones stay as they were) and says how many are kept.
func storeAgentVersions(ctx context.Context, store runtime.AgentStore, path string, stdout io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the agents: %w", err)
	}
	bad := func(err error) error {
		var ae *runtime.AgentError
		if errors.As(err, &ae) && ae.Field != "" {
			return fmt.Errorf("%s: field %q: %s", path, ae.Field, ae.Reason)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	doc, err := runtime.DecodeAgentsDoc(b)
	if err != nil {
		return bad(err)
	}
	defs, err := doc.Resolve(filepath.Dir(path), os.ReadFile)
	if err != nil {
		return bad(err)
	}
	now := time.Now()
	versions := make([]runtime.StoredAgent, len(defs))
	for i, a := range defs {
		versions[i] = runtime.NewStoredAgent(a, now)
	}
	if err := store.PutAgents(ctx, versions); err != nil {
		return err
	}
	kept, err := store.LoadAgents(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "agent versions: %d current, %d kept in all\n", len(versions), len(kept))
	return nil
}
