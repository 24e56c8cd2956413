package serverless_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless/lambdatest"
	"github.com/agentslice/agentslice/internal/sqsq"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

// The slice function with two input queues: a background thread's
// messages are consumed from the background queue only, an interactive
// thread's from the interactive one, and each thread records its class.
func TestSliceFunctionRoutesByClass(t *testing.T) {
	endpoint := testenv.Need(t, lambdatest.SQSEndpointVar)
	c := sqs.NewFromConfig(awstest.Config(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{
		QueueName:  aws.String(awstest.Name(t, "-bg") + ".fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "VisibilityTimeout": "60"}})
	if err != nil {
		t.Fatal(err)
	}
	bgURL := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(bgURL)}) })
	t.Setenv(lambdafn.EnvBackgroundQueueURL, bgURL)
	p := startInProcess(t)

	var mu sync.Mutex
	seen := map[string][]string{} // queue → threads invoked from it
	counting := func(queue string, f lambdatest.InvokeFunc) lambdatest.InvokeFunc {
		return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
			for _, r := range ev.Records {
				if m, err := sqsq.DecodeRecord(r); err == nil {
					mu.Lock()
					seen[queue] = append(seen[queue], m.ThreadID)
					mu.Unlock()
				}
			}
			return f(ctx, ev)
		}
	}
	bgPoller := &lambdatest.Poller{SQS: p.stack.SQS, QueueURL: bgURL, DLQURL: p.stack.DLQ, MaxReceiveCount: lambdatest.MaxReceiveCount,
		Invoke: counting("background", withDeadline(p.fn.Handle, 30*time.Second)), Logf: t.Logf}
	bgPoller.Start(context.Background())
	t.Cleanup(bgPoller.Stop)

	router, err := sqsq.NewClassQueues(p.stack.SQS, sqsq.QueueConfig{URL: p.stack.Input}, bgURL)
	if err != nil {
		t.Fatal(err)
	}
	suffix := time.Now().Format("150405.000")
	threads := map[runtime.Class]string{runtime.ClassBackground: "bg-" + suffix, runtime.ClassInteractive: "in-" + suffix}
	for class, thread := range threads {
		m := runtime.Message{V: 1, ID: "m1", ThreadID: thread, Kind: runtime.KindUser, Text: "hello", Class: class}
		if err := router.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	for class, thread := range threads {
		if got := p.replies(t, thread, 1); got[0] != "reply: Hello there." {
			t.Fatalf("%s thread replied %q", class, got)
		}
		th, err := p.fn.Engine.History.Load(context.Background(), thread)
		if err != nil {
			t.Fatal(err)
		}
		if th.State.Class != class {
			t.Errorf("thread %s recorded class %q, want %q", thread, th.State.Class, class)
		}
	}
	// A message without a class (an old callback URL, send without
	// --class) to the existing background thread: a router that looks the
	// class up in the history database, as the receiver's and `agentslice
	// send`'s do, sends it to the background queue, ordered with the
	// thread's other messages; without the lookup it would go to the
	// interactive queue.
	lookup, closeDB, err := lambdafn.NewClassLookup(context.Background(), lambdafn.ClassDB{PGDSN: p.stack.PGDSN}, awstest.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeDB)
	router.WithClassLookup(lookup, 0)
	bgThread := threads[runtime.ClassBackground]
	if err := router.Send(context.Background(), runtime.Message{V: 1, ID: "m2", ThreadID: bgThread, Kind: runtime.KindUser, Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if got := p.replies(t, bgThread, 2); len(got) != 2 {
		t.Fatalf("background thread replied %q, want two replies", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := slices.Index(seen["background"][1:], bgThread); n < 0 {
		t.Fatalf("background queue delivered %v: the unclassed message went elsewhere", seen["background"])
	}
	if bg := seen["background"]; len(bg) == 0 || bg[0] != threads[runtime.ClassBackground] {
		t.Fatalf("background queue delivered %v, want the background thread only", bg)
	}
	for _, th := range seen["background"] {
		if th != threads[runtime.ClassBackground] {
			t.Fatalf("background queue delivered a message of %s", th)
		}
	}
}
