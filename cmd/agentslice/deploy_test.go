package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func randName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// localAWS points the SDK's default configuration at nothing real: static
// credentials, no shared files.
func localAWS(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	t.Setenv("AWS_REGION", "")
}

func createQueue(t *testing.T, c *sqs.Client, name string, fifo bool) string {
	t.Helper()
	attrs := map[string]string{}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	u := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
	return u
}

func TestSendAndTail(t *testing.T) {
	endpoint := testenv.Need(t, "AGENTSLICE_TEST_SQS_ENDPOINT")
	localAWS(t)
	ctx := context.Background()
	cfg := awstest.Config()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	cfg.HTTPClient = &http.Client{Transport: tr}
	// Cleanups run last-in first-out: close the connections after the
	// queues are deleted, before goleak looks.
	t.Cleanup(tr.CloseIdleConnections)
	c := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	input := createQueue(t, c, randName("cli-in-"), true)
	output := createQueue(t, c, randName("cli-out-"), false)
	common := []string{"--endpoint-url", endpoint, "--region", "us-east-1"}

	t.Run("send", func(t *testing.T) {
		code, out, errOut := runCmd(append(append([]string{"send"}, common...), "--queue-url", input, "--thread", "t-cli", "hello", "there")...)
		if code != 0 {
			t.Fatalf("send: %d %s", code, errOut)
		}
		id := strings.TrimSpace(out)
		if !regexp.MustCompile(`^msg_[0-9a-f]{24}$`).MatchString(id) {
			t.Fatalf("printed ID %q, want a fresh msg_ ID", id)
		}
		code, out, errOut = runCmd(append(append([]string{"send"}, common...), "--queue-url", input, "--thread", "t-cli", "--id", "m-2", "--user", "u1", "--agent", "reviewer", "again")...)
		if code != 0 || strings.TrimSpace(out) != "m-2" {
			t.Fatalf("send with --id: %d %q %s", code, out, errOut)
		}
		// fauxqs hands out one message of a group per receive: take them
		// one by one, deleting each so the group's next one shows.
		var msgs []runtime.Message
		for range 2 {
			got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(input), MaxNumberOfMessages: 10,
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range got.Messages {
				msg, err := runtime.DecodeMessage([]byte(aws.ToString(m.Body)))
				if err != nil {
					t.Fatal(err)
				}
				if m.Attributes["MessageGroupId"] != sqsq.GroupID("t-cli") || m.Attributes["MessageDeduplicationId"] != sqsq.DedupID("t-cli", msg.ID) {
					t.Fatalf("attributes %v", m.Attributes)
				}
				msgs = append(msgs, msg)
				if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(input), ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(msgs) != 2 {
			t.Fatalf("input queue held %d messages, want 2", len(msgs))
		}
		if msgs[0].ID != id || msgs[0].Text != "hello there" || msgs[0].Kind != runtime.KindUser ||
			msgs[1].ID != "m-2" || msgs[1].UserID != "u1" || msgs[1].Agent != "reviewer" || msgs[0].Agent != "" {
			t.Fatalf("messages %+v", msgs)
		}
	})

	t.Run("tail", func(t *testing.T) {
		send := func(body string) {
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(output), MessageBody: aws.String(body)}); err != nil {
				t.Fatal(err)
			}
		}
		rec := func(id, text string) string {
			body, err := sqsq.EncodeOutput(runtime.OutputEvent{ID: id, ThreadID: "t-cli", Kind: "reply", Text: text})
			if err != nil {
				t.Fatal(err)
			}
			return body
		}
		send(rec("o1", "first"))
		send(rec("o1", "first")) // a standard queue may deliver twice: printed once
		send("{not a record")
		withUsage, err := sqsq.EncodeOutput(runtime.OutputEvent{ID: "o2", ThreadID: "t-cli", Kind: "reply", Text: "second",
			Agent: "reviewer", Usage: &runtime.Usage{Input: 120, Output: 30, Cached: 100, CacheWrite: 20, Total: 150}})
		if err != nil {
			t.Fatal(err)
		}
		send(withUsage)
		code, out, errOut := runCmd(append(append([]string{"tail"}, common...), "--queue-url", output, "-n", "2", "--wait", "1")...)
		if code != 0 {
			t.Fatalf("tail: %d %s", code, errOut)
		}
		if out != "[t-cli] reply: first\n[t-cli] reviewer reply: second\n[t-cli] usage so far: 120 input (100 cache read, 20 cache write), 30 output tokens\n" {
			t.Fatalf("tail printed %q", out)
		}
		if !strings.Contains(errOut, "malformed record") {
			t.Fatalf("tail said nothing about the malformed record: %q", errOut)
		}
		send(rec("o3", "third"))
		code, out, _ = runCmd(append(append([]string{"tail"}, common...), "--queue-url", output, "-n", "1", "--json", "--wait", "1")...)
		if code != 0 || strings.TrimSpace(out) != rec("o3", "third") {
			t.Fatalf("tail --json printed %q (the earlier records should have been deleted)", out)
		}
	})
}

func TestDeployFlagErrors(t *testing.T) {
	localAWS(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"send", "--thread", "t", "hi"}, "--queue-url is required"},
		{[]string{"send", "--queue-url", "http://q/in.fifo", "hi"}, "--thread is required"},
		{[]string{"send", "--queue-url", "http://q/in.fifo", "--thread", "t"}, "text is missing"},
		{[]string{"send", "--queue-url", "http://q/in.fifo", "--thread", "t t", "hi"}, `"thread_id"`},
		{[]string{"send", "--queue-url", "http://q/in.fifo", "--thread", "t", "--class", "urgent", "hi"}, "unknown priority class"},
		{[]string{"send", "--queue-url", "http://q/in.fifo", "--thread", "t", "--class", "background", "hi"}, "needs --background-queue-url"},
		{[]string{"send", "--queue-url", "http://q/in.fifo", "--thread", "t", "--agent", "no such", "hi"}, `"agent"`},
		{[]string{"send", "--queue-url", "http://q/in.fifo", "--thread", "t", "hi"}, "no AWS region"},
		{[]string{"send", "--region", "us-east-1", "--queue-url", "http://q/in", "--thread", "t", "hi"}, "not a FIFO queue"},
		{[]string{"tail"}, "pass -queue-url to follow a deployment"},
		{[]string{"tail", "--queue-url", "", "-n", "1"}, "--queue-url is required"},
		{[]string{"tail", "--queue-url", "http://q/out", "-n", "-1"}, "negative"},
		{[]string{"tail", "--queue-url", "http://q/out", "--wait", "30"}, "outside 1..20"},
		{[]string{"migrate"}, "exactly one of --dsn"},
		{[]string{"migrate", "--dsn", "postgres://x@h/db", "--dsql-endpoint", "abc.dsql.us-east-1.on.aws"}, "exactly one of --dsn"},
		{[]string{"migrate", "--dsql-endpoint", "abc.dsql.us-east-1.on.aws"}, "no AWS region"},
		{[]string{"migrate", "--dsql-endpoint", "https://abc", "--region", "us-east-1"}, "bare host name"},
		{[]string{"send", "--bogus"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		code, _, errOut := runCmd(tt.args...)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want a failure saying %q", tt.args, code, errOut, tt.want)
		}
	}
	for _, sub := range []string{"send", "tail", "migrate"} {
		if code, _, errOut := runCmd(sub, "-h"); code != 0 || !strings.Contains(errOut, "usage: agentslice "+sub) {
			t.Errorf("%s -h: exit %d, %q", sub, code, errOut)
		}
	}
}

// schemaDSN creates a schema of its own (dropped when the test ends) and
// returns dsn with search_path set to it.
func schemaDSN(t *testing.T, dsn, prefix string) *url.URL {
	t.Helper()
	ctx := context.Background()
	schema := randName(prefix)
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	dsn := testenv.Need(t, "AGENTSLICE_TEST_PG_DSN")
	ctx := context.Background()
	u := schemaDSN(t, dsn, "cli_")
	schema := u.Query().Get("search_path")
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for i := range 2 { // idempotent
		code, out, errOut := runCmd("migrate", "--dsn", u.String())
		if code != 0 || !strings.HasPrefix(out, "schema is at version ") || !strings.Contains(out, "(postgres)") {
			t.Fatalf("run %d: %d %q %s", i, code, out, errOut)
		}
	}
	var n int
	if err := admin.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s.schema_migrations", schema)).Scan(&n); err != nil || n == 0 {
		t.Fatalf("schema_migrations rows: %d, %v", n, err)
	}
	// A thread as the store wrote it before schema version 5 (no input
	// recorded, no inputs_from): --backfill marks it.
	for _, stmt := range []string{
		`INSERT INTO %s.threads (id, parent, depth, spawn_at, version, length, format, state) VALUES ('old', '', 0, 0, 1, 1, 1, '{"stack":["old"]}')`,
		`INSERT INTO %s.items (thread_id, pos, chunk, format, body) VALUES ('old', 0, 0, 1, '{"kind":"user","input":"m1","text":"hi"}')`,
	} {
		if _, err := admin.Exec(ctx, fmt.Sprintf(stmt, schema)); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	code, out, errOut := runCmd("migrate", "--dsn", u.String(), "--backfill")
	if code != 0 || !strings.Contains(out, "backfill: 1 threads now load from their compaction point (1 item inputs recorded in 2 transactions)") {
		t.Fatalf("migrate --backfill: %d %q %s", code, out, errOut)
	}
	var input string
	if err := admin.QueryRow(ctx, fmt.Sprintf("SELECT input FROM %s.items WHERE thread_id = 'old'", schema)).Scan(&input); err != nil || input != "m1" {
		t.Fatalf("the old item's input after --backfill: %q, %v", input, err)
	}
}
