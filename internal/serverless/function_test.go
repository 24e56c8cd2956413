package serverless_test

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/otelx"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/tools"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless"
	"github.com/agentslice/agentslice/internal/serverless/lambdatest"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// inProcess is the slice function, the callback receiver and the delay
// relay built from the environment exactly as their mains build them, but
// called in this process, against the local services. lambdatest.Poller
// plays Lambda's event source mappings.
type inProcess struct {
	stack   *lambdatest.Stack
	fn      *serverless.SliceFunction
	logs    *lambdatest.Logs
	outputs *lambdatest.Collector
	dlq     *lambdatest.Collector
	queue   *sqsq.Queue
	deploy  *deployTool
}

// withDeadline gives each invocation a Lambda-like deadline.
func withDeadline(f lambdatest.InvokeFunc, d time.Duration) lambdatest.InvokeFunc {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return f(ctx, ev)
	}
}

func startInProcess(t *testing.T) *inProcess {
	t.Helper()
	return startInProcessTraced(t, nil)
}

// startInProcessTraced is startInProcess with the slice function, the
// receiver and the relay traced
// by tracing (nil: not traced, as by default).
func startInProcessTraced(t *testing.T, tracing *otelx.Tracing) *inProcess {
	t.Helper()
	st := lambdatest.NewStack(t)
	for _, kv := range st.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx := context.Background()
	p := &inProcess{stack: st, logs: &lambdatest.Logs{}}
	out := &lambdafn.SyncWriter{W: p.logs}

	// The receiver reads the keyring inline, the slice function from the
	// secret: both ways of the contract are exercised.
	rcfg, err := lambdafn.LoadReceiverConfig(envWith(map[string]string{
		lambdafn.EnvCallbackKeysSecret: "", lambdafn.EnvCallbackKeys: st.Keys}))
	if err != nil {
		t.Fatal(err)
	}
	rc, rlog, err := lambdafn.BuildReceiver(ctx, rcfg, lambdafn.Options{Stdout: out, Tracing: tracing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.(io.Closer).Close() })
	front := httptest.NewServer(lambdatest.FunctionURLFront(lambdafn.FunctionURLHandler(rc, rlog)))
	t.Cleanup(front.Close)

	p.deploy = newDeployTool(t)
	kit, err := rap.NewServer(rap.ServerConfig{Name: "clock", Tools: []rap.Tool{tools.GetTime(nil), p.deploy.tool()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(ctx); err != nil {
		t.Fatal(err)
	}
	kitSrv := httptest.NewServer(kit)
	t.Cleanup(func() { kitSrv.Close(); kit.Stop() })

	catalog, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(lambdafn.EnvModelCatalog, string(catalog))
	t.Setenv(lambdafn.EnvToolServers, kitSrv.URL)
	t.Setenv(lambdafn.EnvCallbackURL, front.URL+"/callback")
	cfg, err := serverless.LoadSliceConfig(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	p.fn, err = serverless.BuildSliceFunction(ctx, cfg, lambdafn.Options{Stdout: out, Tracing: tracing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.fn.Close)

	relay, err := lambdafn.BuildRelay(ctx, lambdafn.RelayConfig{InputQueueURL: st.Input}, lambdafn.Options{Stdout: out, Tracing: tracing})
	if err != nil {
		t.Fatal(err)
	}
	for _, poller := range []*lambdatest.Poller{
		{SQS: st.SQS, QueueURL: st.Input, DLQURL: st.DLQ, MaxReceiveCount: lambdatest.MaxReceiveCount,
			Invoke: withDeadline(p.fn.Handle, 30*time.Second), Logf: t.Logf},
		{SQS: st.SQS, QueueURL: st.Delay, DLQURL: st.DelayDLQ, MaxReceiveCount: lambdatest.MaxReceiveCount,
			Invoke: withDeadline(relay, 30*time.Second), Logf: t.Logf},
	} {
		poller.Start(ctx)
		t.Cleanup(poller.Stop)
	}
	p.outputs = &lambdatest.Collector{SQS: st.SQS, URL: st.Output}
	p.dlq = &lambdatest.Collector{SQS: st.SQS, URL: st.DLQ}
	for _, c := range []*lambdatest.Collector{p.outputs, p.dlq} {
		c.Start(ctx)
		t.Cleanup(c.Stop)
	}
	p.queue, err = sqsq.NewQueue(st.SQS, sqsq.QueueConfig{URL: st.Input})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range p.logs.Lines() {
				t.Log(l)
			}
		}
	})
	return p
}

// envWith is os.Getenv with some variables replaced.
func envWith(over map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := over[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
}

func (p *inProcess) send(t *testing.T, thread, id, text string) {
	t.Helper()
	if err := p.queue.Send(context.Background(), runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindUser, Text: text}); err != nil {
		t.Fatal(err)
	}
}

// replies waits until thread has n events on the output queue and returns
// their texts.
func (p *inProcess) replies(t *testing.T, thread string, n int) []string {
	t.Helper()
	var texts []string
	err := p.outputs.WaitFor(30*time.Second, func(got []lambdatest.Received) bool {
		texts = texts[:0]
		seen := map[string]bool{}
		for _, r := range got {
			ev, err := sqsq.DecodeOutput(r.Body)
			if err != nil || ev.ThreadID != thread || seen[ev.ID] {
				continue
			}
			seen[ev.ID] = true
			texts = append(texts, ev.Kind+": "+ev.Text)
		}
		return len(texts) >= n
	})
	if err != nil {
		t.Fatal(err)
	}
	return texts
}

// TestSliceFunctionInProcess runs a plain turn and a tool-call turn
// (RAP tool server, signed callback, receiver, next slice) through the
// slice function's real wiring, and reports the storage and queue round
// trips each warm slice made.
func TestSliceFunctionInProcess(t *testing.T) {
	p := startInProcess(t)
	suffix := time.Now().Format("150405.000")

	// Warm-up: the first slice connects to the database and prepares the
	// statements; the measured slices below run warm.
	p.send(t, "warm-"+suffix, "m1", "hello")
	p.replies(t, "warm-"+suffix, 1)

	plain := "plain-" + suffix
	p.send(t, plain, "m1", "hello")
	if got := p.replies(t, plain, 1); got[0] != "reply: Hello there." {
		t.Fatalf("plain turn replied %q", got)
	}
	p.send(t, plain, "m2", "hello again")
	if got := p.replies(t, plain, 2); got[1] != "reply: Hello again." {
		t.Fatalf("second plain turn replied %q", got)
	}

	tool := "tool-" + suffix
	p.send(t, tool, "m1", "what time is it?")
	if got := p.replies(t, tool, 1); got[0] != "reply: The clock answered." {
		t.Fatalf("tool turn replied %q", got)
	}
	hist := p.fn.Engine.History
	th, err := hist.Load(context.Background(), tool)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range th.Items {
		kinds = append(kinds, it.Kind.String())
		if it.Kind == runtime.ItemToolResult && (it.IsError || !strings.Contains(it.Text, "UTC")) {
			t.Fatalf("get_time result = %+v", it)
		}
	}
	if want := "user assistant tool_call tool_result assistant"; strings.Join(kinds, " ") != want {
		t.Fatalf("history of the tool thread = %v, want %s", kinds, want)
	}

	report := func(name string, sl lambdatest.SliceLog) {
		t.Logf("%-34s round trips %d %v (completions %d, dispatched %q, first delivery %v)", name, sl.RoundTrips, sl.RoundTripsBy,
			sl.Completions, sl.Dispatched, sl.FirstDelivery)
	}
	ps, err := p.logs.WaitSlices(plain, 2, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := p.logs.WaitSlices(tool, 2, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	report("plain turn (user -> reply)", ps[0])
	report("plain turn, 2nd (user -> reply)", ps[1])
	report("tool turn (user -> get_time call)", ts[0])
	report("tool turn (result -> reply)", ts[1])
	for _, sl := range append(ps, ts...) {
		if sl.Outcome != serverless.OutcomeOK || sl.RoundTrips == 0 || sl.RoundTripsBy["sql"] == 0 {
			t.Fatalf("slice line %+v: want outcome ok and counted round trips", sl)
		}
	}
	if ts[0].Dispatched == "" {
		t.Fatalf("the first tool slice dispatched nothing: %+v", ts[0])
	}
	// docs/design.md's budget: a warm slice makes at most 4 storage/queue round
	// trips, the model and the tool excluded. Here: one load and one commit
	// (SQL), the reply (SQS), and one dedup Mark (DynamoDB; it writes the
	// consumed IDs and the "outbox sent" record as parallel puts, one round
	// trip of latency, at most two requests). First deliveries skip the
	// dedup lookup, and these batches prove their outbox went out.
	for i, sl := range append(ps, ts...) {
		by := sl.RoundTripsBy
		sequential := by["sql"] + by["sql_prepare"] + by["sqs"] + min(by["dynamodb"], 1)
		if by["sql"] > 2 || by["sqs"] > 1 || by["dynamodb"] > 2 || sequential > 4 {
			t.Errorf("warm slice %d made %d round trips %v, over the budget of 4 (at most 2 SQL, 1 SQS, 1 dedup Mark)", i, sl.RoundTrips, by)
		}
	}
}
