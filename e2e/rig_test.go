//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/tools"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless/lambdatest"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/testenv"
)

// Variables scripts/e2e.sh sets.
const (
	binVar = "AGENTSLICE_E2E_BIN" // directory holding slicefn/, rapreceiver/, delayrelay/ with a bootstrap each
	rieVar = "AGENTSLICE_E2E_RIE" // the aws-lambda-rie executable
	logVar = "AGENTSLICE_E2E_LOG" // optional: file to write every function's output to
)

// Timeout bounds every wait for an outcome.
const Timeout = 45 * time.Second

// rig is a local deployment with the three functions running under RIE.
type rig struct {
	stack   *lambdatest.Stack
	queue   *sqsq.Queue
	history *dsql.Store
	logs    *lambdatest.Logs // the slice function's log lines
	outputs *lambdatest.Collector
	dlq     *lambdatest.Collector
	input   *lambdatest.Poller
	delay   *lambdatest.Poller
	front   string // the callback receiver's "Function URL"

	// With rigOptions.background: the background input queue, its poller,
	// a sender that routes by class, and which threads each input queue
	// delivered ("interactive", "background").
	bgURL  string
	bg     *lambdatest.Poller
	router *sqsq.Router

	// With rigOptions.wakeupDLQ: the wake-up DLQ every schedule names, and
	// the relay's poller on it.
	wakeupURL, wakeupARN string
	wakeup               *lambdatest.Poller

	mu        sync.Mutex
	all       []string            // every function's output, prefixed by its name
	delivered map[string][]string // input queue → thread IDs of the records it delivered
}

func (r *rig) line(fn string) func(string) {
	return func(s string) {
		r.mu.Lock()
		r.all = append(r.all, fn+": "+s)
		r.mu.Unlock()
		if fn == "slicefn" {
			r.logs.Line(s)
		}
	}
}

// rigOptions change the slice function of a rig: the directory under the
// bin directory its bootstrap comes from (default "slicefn") and extra
// environment.
type rigOptions struct {
	sliceDir string
	sliceEnv []string
	// background adds the background input queue (issue 17): the slice
	// function, the receiver and the relay are told its URL, and a second
	// poller feeds it to the slice function.
	background bool
	// wakeupDLQ adds the standard wake-up DLQ: the slice function names it
	// in every schedule (AGENTSLICE_SCHEDULE_DLQ_ARN), and a second poller
	// feeds it to the delay relay, as the stack's second event source of
	// the relay does; what the relay cannot deliver goes to the delay DLQ.
	wakeupDLQ bool
	// toolServers are more RAP tool servers' base URLs for the slice
	// function (besides the in-process clock).
	toolServers []string
}

// counting wraps an invocation so that the rig records which threads'
// records each input queue delivered.
func (r *rig) counting(queue string, f lambdatest.InvokeFunc) lambdatest.InvokeFunc {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for _, rec := range ev.Records {
			if m, err := sqsq.DecodeRecord(rec); err == nil {
				r.mu.Lock()
				r.delivered[queue] = append(r.delivered[queue], m.ThreadID)
				r.mu.Unlock()
			}
		}
		return f(ctx, ev)
	}
}

// deliveredBy returns the threads whose records queue delivered.
func (r *rig) deliveredBy(queue string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.delivered[queue]...)
}

func startRig(t *testing.T, opts ...rigOptions) *rig {
	t.Helper()
	var o rigOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.sliceDir == "" {
		o.sliceDir = "slicefn"
	}
	bin := testenv.Need(t, binVar)
	rieBin := testenv.Need(t, rieVar)
	st := lambdatest.NewStack(t)
	ctx := context.Background()
	r := &rig{stack: st, logs: &lambdatest.Logs{}, delivered: map[string][]string{}}
	var bgEnv []string
	if o.background {
		r.bgURL = st.AddQueue(t, "-bg", true)
		bgEnv = []string{lambdafn.EnvBackgroundQueueURL + "=" + r.bgURL}
	}
	if o.wakeupDLQ {
		r.wakeupURL = st.AddQueue(t, "-wakeup-dlq", false)
		attrs, err := st.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(r.wakeupURL),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		r.wakeupARN = attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
		o.sliceEnv = append(o.sliceEnv, lambdafn.EnvScheduleDLQARN+"="+r.wakeupARN)
	}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if path := os.Getenv(logVar); path != "" {
			_ = os.WriteFile(path, []byte(strings.Join(r.all, "\n")+"\n"), 0o644)
		}
		if t.Failed() {
			from := max(0, len(r.all)-200)
			t.Logf("last %d lines of the functions' output:\n%s", len(r.all)-from, strings.Join(r.all[from:], "\n"))
		}
	})

	start := func(fn string, env ...string) *lambdatest.RIE {
		t.Helper()
		dir := fn
		if fn == "slicefn" {
			dir = o.sliceDir
		}
		e := &lambdatest.RIE{Binary: rieBin, Bootstrap: filepath.Join(bin, dir, "bootstrap"), Lines: r.line(fn),
			Env: lambdatest.Env(append([]string{"AWS_LAMBDA_FUNCTION_NAME=" + fn, "AWS_LAMBDA_FUNCTION_TIMEOUT=30"}, env...)...)}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Stop)
		return e
	}
	awsEnv := st.AWSEnv()

	// The tool server: a kit server with get_time, in this process.
	kit, err := rap.NewServer(rap.ServerConfig{Name: "clock", Tools: []rap.Tool{tools.GetTime(nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kit.Start(ctx); err != nil {
		t.Fatal(err)
	}
	kitSrv := httptest.NewServer(kit)
	t.Cleanup(func() { kitSrv.Close(); kit.Stop() })

	// The callback receiver reads its keyring inline, the slice function
	// from the Secrets Manager secret: both ways of the contract run.
	// With the dedup table and the output queue, as the stack sets them:
	// the views of a call that goes on are display only (live views).
	receiver := start("rapreceiver", append(append(awsEnv,
		lambdafn.EnvInputQueueURL+"="+st.Input, lambdafn.EnvCallbackKeys+"="+st.Keys,
		lambdafn.EnvDedupTable+"="+st.Table, lambdafn.EnvOutputQueueURL+"="+st.Output), bgEnv...)...)
	front := httptest.NewServer(lambdatest.FunctionURLFront(receiver.InvokeFunctionURL))
	t.Cleanup(front.Close)
	r.front = front.URL + "/"

	catalog, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	// Provider waits are off here: the "keeps failing" case proves the
	// dead-letter path after maxReceiveCount with a model that never
	// answers; the wait itself (the default) is proven through the same
	// queues, relay and stores by internal/serverless's
	// TestProviderOutageWaitsThroughTheDelayQueue.
	sliceEnv := append(st.Env(),
		lambdafn.EnvProviderWait+"=off",
		lambdafn.EnvModelCatalog+"="+string(catalog),
		lambdafn.EnvToolServers+"="+strings.Join(append([]string{kitSrv.URL}, o.toolServers...), ","),
		lambdafn.EnvCallbackURL+"="+r.front)
	slicefn := start("slicefn", append(append(sliceEnv, bgEnv...), o.sliceEnv...)...)
	relay := start("delayrelay", append(append(awsEnv, lambdafn.EnvInputQueueURL+"="+st.Input), bgEnv...)...)

	// A killed invocation (kill_test.go) comes back after a second rather
	// than the visibility timeout; reported failures wait what the slice
	// function set, as they would on AWS.
	r.input = &lambdatest.Poller{SQS: st.SQS, QueueURL: st.Input, DLQURL: st.DLQ, MaxReceiveCount: lambdatest.MaxReceiveCount,
		FailedInvocationRetry: time.Second, Invoke: r.counting("interactive", slicefn.InvokeSQS), Logf: func(f string, a ...any) { r.line("poller(input)")(fmt.Sprintf(f, a...)) }}
	r.delay = &lambdatest.Poller{SQS: st.SQS, QueueURL: st.Delay, DLQURL: st.DelayDLQ, MaxReceiveCount: lambdatest.MaxReceiveCount,
		Invoke: relay.InvokeSQS, Logf: func(f string, a ...any) { r.line("poller(delay)")(fmt.Sprintf(f, a...)) }}
	pollers := []*lambdatest.Poller{r.input, r.delay}
	if o.background {
		// Its own event source, as the stack has; the same FIFO DLQ.
		r.bg = &lambdatest.Poller{SQS: st.SQS, QueueURL: r.bgURL, DLQURL: st.DLQ, MaxReceiveCount: lambdatest.MaxReceiveCount,
			FailedInvocationRetry: time.Second, Invoke: r.counting("background", slicefn.InvokeSQS), Logf: func(f string, a ...any) { r.line("poller(background)")(fmt.Sprintf(f, a...)) }}
		pollers = append(pollers, r.bg)
	}
	if o.wakeupDLQ {
		r.wakeup = &lambdatest.Poller{SQS: st.SQS, QueueURL: r.wakeupURL, DLQURL: st.DelayDLQ, MaxReceiveCount: lambdatest.MaxReceiveCount,
			Invoke: relay.InvokeSQS, Logf: func(f string, a ...any) { r.line("poller(wakeup-dlq)")(fmt.Sprintf(f, a...)) }}
		pollers = append(pollers, r.wakeup)
	}
	for _, p := range pollers {
		p.Start(ctx)
		t.Cleanup(p.Stop)
	}
	r.outputs = &lambdatest.Collector{SQS: st.SQS, URL: st.Output}
	r.dlq = &lambdatest.Collector{SQS: st.SQS, URL: st.DLQ}
	for _, c := range []*lambdatest.Collector{r.outputs, r.dlq} {
		c.Start(ctx)
		t.Cleanup(c.Stop)
	}
	if r.queue, err = sqsq.NewQueue(st.SQS, sqsq.QueueConfig{URL: st.Input}); err != nil {
		t.Fatal(err)
	}
	if r.router, err = sqsq.NewClassQueues(st.SQS, sqsq.QueueConfig{URL: st.Input}, r.bgURL); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, st.PGDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	r.history = dsql.New(pool, dsql.Options{})
	return r
}

// send puts a user message on the input queue as `agentslice send` does.
func (r *rig) send(t *testing.T, thread, id, text string) {
	t.Helper()
	if err := r.queue.Send(context.Background(), runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindUser, Text: text}); err != nil {
		t.Fatal(err)
	}
}

// sendRaw puts a body on the input queue as-is, in thread's group.
func (r *rig) sendRaw(t *testing.T, thread, dedupID, body string) {
	t.Helper()
	_, err := r.stack.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(r.stack.Input),
		MessageBody: aws.String(body), MessageGroupId: aws.String(sqsq.GroupID(thread)), MessageDeduplicationId: aws.String(dedupID)})
	if err != nil {
		t.Fatal(err)
	}
}

// replies waits until thread has n distinct events on the output queue and
// returns them as "kind: text", in arrival order.
func (r *rig) replies(t *testing.T, thread string, n int) []string {
	t.Helper()
	var texts []string
	err := r.outputs.WaitFor(Timeout, func(got []lambdatest.Received) bool {
		texts = texts[:0]
		seen := map[string]bool{}
		for _, rc := range got {
			ev, err := sqsq.DecodeOutput(rc.Body)
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

// slices waits for n slice log lines of thread.
func (r *rig) slices(t *testing.T, thread string, n int) []lambdatest.SliceLog {
	t.Helper()
	got, err := r.logs.WaitSlices(thread, n, Timeout)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// kinds returns the thread's history as item kinds (tool calls with their
// tool's name).
func (r *rig) kinds(t *testing.T, thread string) ([]string, *runtime.Thread) {
	t.Helper()
	th, err := r.history.Load(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range th.Items {
		k := it.Kind.String()
		if it.Kind == runtime.ItemToolCall {
			k += "(" + it.Name + ")"
		}
		out = append(out, k)
	}
	return out, th
}
