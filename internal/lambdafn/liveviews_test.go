package lambdafn_test

import (
	"context"
	"encoding/base64"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

// recOutput records the events published to it.
type recOutput struct {
	mu  sync.Mutex
	evs []runtime.OutputEvent
}

func (o *recOutput) Publish(_ context.Context, ev runtime.OutputEvent) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evs = append(o.evs, ev)
	return nil
}

func (o *recOutput) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.evs)
}

// TestLiveViewsAcrossEnvironments: on AWS each callback may reach another
// execution environment of the receiver. With the live views in the dedup
// table (WithLiveViews, dedup.LiveViews on DynamoDB Local), the views of a
// call that goes on in the background are display only whichever
// environment takes them (published, nothing enqueued: no slice), and the
// environment that takes the call's final event puts the call's latest
// view into history right before it. Each environment keeping its own
// memory instead (the contrast at the end) sends a view to history as a
// slice when another environment took the result that started the call.
func TestLiveViewsAcrossEnvironments(t *testing.T) {
	ctx := context.Background()
	endpoint := testenv.Need(t, "AGENTSLICE_TEST_DYNAMODB_ENDPOINT")
	ddb := dynamodb.NewFromConfig(awstest.Config(), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(endpoint) })
	table := awstest.Name(t, "-views")
	if err := dedup.CreateTable(ctx, ddb, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = ddb.DeleteTable(context.WithoutCancel(ctx), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	keys, err := rap.ParseKeyring("k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("v", 32))))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := (&rap.Signer{Keys: keys, BaseURL: "https://abc.lambda-url.us-east-1.on.aws/callback"}).CallbackURL("thread-1", "call-1")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(signed)
	query := u.Query()

	q := &recQueue{}
	env := func(store rap.LiveViewStore, out runtime.Output) *rap.Receiver {
		t.Helper()
		rc, err := rap.NewReceiver(lambdafn.WithLiveViews(lambdafn.ReceiverFor(keys, q, lambdafn.Options{Logger: raptest.QuietLogger()}), store, out))
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	shared, err := dedup.NewLiveViews(ddb, dedup.LiveViewsConfig{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	outA, outB := &recOutput{}, &recOutput{}
	a, b := env(shared, outA), env(shared, outB)
	accept := func(rc *rap.Receiver, body string) {
		t.Helper()
		if err := rc.Accept(ctx, query, []byte(body)); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
	}
	enqueued := func() []runtime.Message {
		q.mu.Lock()
		defer q.mu.Unlock()
		return append([]runtime.Message(nil), q.msgs...)
	}
	view := func(pct string) string {
		return `{"type":"view_update","group_id":"thread-1","view_type":"progress","content":{"pct":` + pct + `}}`
	}

	accept(a, `{"type":"tool_result","id":"call-1","group_id":"thread-1","text":"started","subscription":true}`)
	accept(b, view("10"))
	accept(a, view("20"))
	accept(b, view("30"))
	if msgs := enqueued(); len(msgs) != 1 || msgs[0].Kind != runtime.KindToolResult {
		t.Fatalf("enqueued %+v; want only the result: views of a call that goes on are display only", msgs)
	}
	if outA.count() != 1 || outB.count() != 2 {
		t.Fatalf("published %d and %d views, want 1 and 2", outA.count(), outB.count())
	}
	accept(a, `{"type":"subscription_event","group_id":"thread-1","tool_call_id":"call-1","text":"done","final":true}`)
	msgs := enqueued()
	if len(msgs) != 3 || msgs[1].Kind != runtime.KindView || msgs[1].Text != `{"view_type":"progress","content":{"pct":30}}` ||
		msgs[2].Kind != runtime.KindEvent || msgs[2].Text != "done" {
		t.Fatalf("after the final event enqueued %+v; want the result, the latest view, the event", msgs)
	}
	if vs, err := shared.Views(ctx, "thread-1"); err != nil || len(vs) != 0 {
		t.Fatalf("live views left after the call ended: %+v, %v", vs, err)
	}
	// The call is over: a late view goes to history (a message).
	accept(b, view("40"))
	if msgs := enqueued(); len(msgs) != 4 || msgs[3].Kind != runtime.KindView {
		t.Fatalf("a view after the call ended: enqueued %+v", msgs)
	}

	// The contrast: environments that each keep their own memory.
	q.mu.Lock()
	q.msgs = nil
	q.mu.Unlock()
	c, d := env(rap.NewMemoryLiveViews(10), nil), env(rap.NewMemoryLiveViews(10), nil)
	signed2, _ := (&rap.Signer{Keys: keys, BaseURL: "https://abc.lambda-url.us-east-1.on.aws/callback"}).CallbackURL("thread-1", "call-2")
	u2, _ := url.Parse(signed2)
	query = u2.Query()
	accept(c, `{"type":"tool_result","id":"call-2","group_id":"thread-1","text":"started","subscription":true}`)
	accept(d, view("50"))
	if msgs := enqueued(); len(msgs) != 2 || msgs[1].Kind != runtime.KindView {
		t.Fatalf("per-environment memory: enqueued %+v; want the view as a message (the mark is in the other environment)", msgs)
	}
}
