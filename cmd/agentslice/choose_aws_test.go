package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

// callsAsk calls the asynchronous "ask" tool.
type callsAsk struct{}

func (callsAsk) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	w.ToolCall("", "ask", `{}`)
	return nil
}

type dropQueue struct{}

func (dropQueue) Send(context.Context, ...runtime.Message) error { return nil }

// TestChooseOnADeployment: `agentslice choose -queue-url` reads the
// choice a thread waits on from the history database (PostgreSQL here, as
// DSQL speaks it), POSTs {id, selected} to the tool's response_url and
// sends the answer message to the thread's input queue; a pick that is not
// an option, or a thread that waits on no choice, sends nothing.
func TestChooseOnADeployment(t *testing.T) {
	dsn := testenv.Need(t, "AGENTSLICE_TEST_PG_DSN")
	endpoint := testenv.Need(t, "AGENTSLICE_TEST_SQS_ENDPOINT")
	localAWS(t)
	ctx := context.Background()

	// A migrated schema of its own, with a thread waiting on a choice.
	u := schemaDSN(t, dsn, "cli_choose_")
	if code, _, errOut := runCmd("migrate", "--dsn", u.String()); code != 0 {
		t.Fatalf("migrate: %s", errOut)
	}

	var mu sync.Mutex
	var answers []rap.ChoiceResponse
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a rap.ChoiceResponse
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		answers = append(answers, a)
		mu.Unlock()
	}))
	defer tool.Close()

	pool, err := dsql.NewPool(ctx, dsql.Config{Dialect: dsql.Postgres, DSN: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tb := runtime.NewToolbox()
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "ask"}, Async: &runtimetest.RecordingTool{}})
	e := &runtime.Engine{History: dsql.New(pool, dsql.Options{}), Queue: dropQueue{}, Model: callsAsk{}, Tools: tb}
	thread := "t-choose"
	slice := func(m runtime.Message) *runtime.Thread {
		t.Helper()
		m.V, m.ThreadID = runtime.MessageVersion, thread
		if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: thread, Messages: []runtime.Message{m}}); err != nil {
			t.Fatal(err)
		}
		th, err := e.History.Load(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	call := slice(runtime.Message{ID: "u1", Kind: runtime.KindUser, Text: "go"}).State.Pending.ID

	cfg := awstest.Config()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	cfg.HTTPClient = &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections) // after the queue is deleted, before goleak looks
	c := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	input := createQueue(t, c, randName("cli-choose-"), true)
	common := []string{"choose", "--endpoint-url", endpoint, "--region", "us-east-1", "--queue-url", input, "--dsn", u.String()}

	if code, _, errOut := runCmd(append(common, thread, "production")...); code == 0 || !strings.Contains(errOut, "waits for no choice") {
		t.Fatalf("choose before any choice: exit %d, %q", code, errOut)
	}
	choice, _ := json.Marshal(rap.UserChoice{Type: rap.TypeUserChoice, GroupID: thread, ID: call, Prompt: "Deploy where?",
		Choices: []string{"staging", "production"}, ResponseURL: tool.URL + "/choices/" + call})
	slice(runtime.Message{ID: "c1", Kind: runtime.KindNotice, ToolCallID: call, Text: "choose", Choice: string(choice)})

	if code, _, errOut := runCmd(append(common, thread, "moon")...); code == 0 || !strings.Contains(errOut, `"moon" is not one of the choices`) {
		t.Fatalf("choose moon: exit %d, %q", code, errOut)
	}
	code, out, errOut := runCmd(append(common, thread, "production")...)
	if code != 0 || strings.TrimSpace(out) != "chose [1] production" {
		t.Fatalf("choose production: exit %d, %q %s", code, out, errOut)
	}
	mu.Lock()
	got := append([]rap.ChoiceResponse(nil), answers...)
	mu.Unlock()
	if len(got) != 1 || got[0] != (rap.ChoiceResponse{ID: call, Selected: 1}) {
		t.Fatalf("the tool heard %+v, want one answer {%s 1}", got, call)
	}
	rec, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(input), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Messages) != 1 {
		t.Fatalf("input queue holds %d messages, want the answer alone", len(rec.Messages))
	}
	m, err := runtime.DecodeMessage([]byte(aws.ToString(rec.Messages[0].Body)))
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != runtime.KindAnswer || m.ThreadID != thread || m.ToolCallID != call || m.Choice != `{"id":"`+call+`","selected":1}` {
		t.Fatalf("answer message %+v", m)
	}
	// The thread consumes it: the choice is no longer pending.
	if _, ok := rap.PendingChoiceOf(slice(m), call); ok {
		t.Fatal("the choice is still pending after its answer was consumed")
	}

	// A background thread's answer must go to the background queue: without
	// its URL, nothing is sent (the thread's FIFO order would break).
	thread = "t-choose-bg"
	bgCall := slice(runtime.Message{ID: "u1", Kind: runtime.KindUser, Text: "go", Class: runtime.ClassBackground}).State.Pending.ID
	slice(runtime.Message{ID: "c1", Kind: runtime.KindNotice, ToolCallID: bgCall, Text: "choose", Choice: string(choice)})
	if code, _, errOut := runCmd(append(common, thread, "0")...); code == 0 || !strings.Contains(errOut, "--background-queue-url") {
		t.Fatalf("choose on a background thread without its queue: exit %d, %q", code, errOut)
	}
	mu.Lock()
	n := len(answers)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("the tool heard %d answers, want still 1", n)
	}
}
