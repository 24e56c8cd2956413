package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"

	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

// send without --class, given the history database, sends a message to an
// existing background thread to the background queue (its class looked up),
// and one to a new thread to the interactive queue; without the database it
// says where the message went. migrate --receiver-role creates the
// receiver's read-only role.
func TestSendLooksUpTheClass(t *testing.T) {
	endpoint := testenv.Need(t, "AGENTSLICE_TEST_SQS_ENDPOINT")
	dsn := testenv.Need(t, "AGENTSLICE_TEST_PG_DSN")
	localAWS(t)
	ctx := context.Background()

	u := schemaDSN(t, dsn, "cli_cls_")
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	reader := randName("cli_reader_")
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), `DROP OWNED BY "`+reader+`"`)
		_, _ = admin.Exec(context.Background(), `DROP ROLE IF EXISTS "`+reader+`"`)
	})
	if code, out, errOut := runCmd("migrate", "--dsn", u.String(), "--receiver-role", reader); code != 0 || !strings.Contains(out, "database role "+reader+" may read the thread rows") {
		t.Fatalf("migrate --receiver-role: %d %q %s", code, out, errOut)
	}
	pool, err := dsql.NewPool(ctx, dsql.Config{Dialect: dsql.Postgres, DSN: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	bg := &runtime.Commit{ThreadID: "t-bg", Append: []runtime.Item{{Kind: runtime.ItemUser, Text: "hi"}},
		State: runtime.ThreadState{Version: 1, Length: 1, Stack: []string{"t-bg"}, Class: runtime.ClassBackground}}
	if err := dsql.New(pool, dsql.Options{}).Commit(ctx, bg); err != nil {
		t.Fatal(err)
	}

	cfg := awstest.Config()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	cfg.HTTPClient = &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	c := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	input := createQueue(t, c, randName("cli-in-"), true)
	bgQueue := createQueue(t, c, randName("cli-bg-"), true)
	common := []string{"send", "--endpoint-url", endpoint, "--region", "us-east-1", "--queue-url", input, "--background-queue-url", bgQueue}
	for _, th := range []string{"t-bg", "t-new"} {
		if code, _, errOut := runCmd(append(common, "--dsn", u.String(), "--thread", th, "--id", "m-"+th, "hello")...); code != 0 {
			t.Fatalf("send to %s: %d %s", th, code, errOut)
		}
	}
	code, _, errOut := runCmd(append(common, "--thread", "t-bg", "--id", "m-blind", "hello")...)
	if code != 0 || !strings.Contains(errOut, "goes to the interactive queue") {
		t.Fatalf("send without --class or a database: %d %q, want a note on where it went", code, errOut)
	}
	ids := func(queue string) string {
		var got []string
		for range 3 {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out.Messages {
				msg, err := runtime.DecodeMessage([]byte(aws.ToString(m.Body)))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, msg.ID)
				if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queue), ReceiptHandle: m.ReceiptHandle}); err != nil {
					t.Fatal(err)
				}
			}
		}
		return fmt.Sprint(got)
	}
	if got := ids(bgQueue); got != "[m-t-bg]" {
		t.Errorf("background queue: %s, want [m-t-bg]", got)
	}
	if got := ids(input); !strings.Contains(got, "m-t-new") || !strings.Contains(got, "m-blind") || strings.Contains(got, "m-t-bg") {
		t.Errorf("interactive queue: %s, want m-t-new and m-blind", got)
	}
}
