package serverless_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentslice/agentslice/internal/serverless"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

func TestDeadLettersOnFauxqs(t *testing.T) {
	t.Parallel()
	endpoint := testenv.Need(t, "AGENTSLICE_TEST_SQS_ENDPOINT")
	ctx := context.Background()
	c := sqs.NewFromConfig(awstest.Config(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	for _, fifo := range []bool{true, false} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			name := awstest.Name(t, fmt.Sprintf("-%d", time.Now().UnixNano()%1e9))
			attrs := map[string]string{}
			if fifo {
				name += ".fifo"
				attrs["FifoQueue"] = "true"
			}
			out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
			if err != nil {
				t.Fatal(err)
			}
			url := aws.ToString(out.QueueUrl)
			t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
			d, err := serverless.NewDeadLetters(c, url)
			if err != nil {
				t.Fatal(err)
			}
			rec := events.SQSMessage{MessageId: "0b1c2d3e-0000-4000-8000-000000000001", Body: "{not json",
				Attributes: map[string]string{"MessageGroupId": "thread-x", "ApproximateReceiveCount": "2"}}
			// A reason with characters SQS refuses and one fauxqs refuses.
			reason := "bad message: malformed JSON\x00 near 😀 " + strings.Repeat("x", 5000)
			for range 2 { // a retried move is deduplicated on a FIFO queue
				if err := d.DeadLetter(ctx, rec, serverless.DeadLetter{Source: serverless.SourceDecode, Reason: reason}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
				MessageAttributeNames:       []string{"All"},
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
			if err != nil {
				t.Fatal(err)
			}
			wantN := 2
			if fifo {
				wantN = 1
			}
			if len(got.Messages) != wantN {
				t.Fatalf("received %d messages, want %d", len(got.Messages), wantN)
			}
			m := got.Messages[0]
			a := m.MessageAttributes
			if aws.ToString(m.Body) != rec.Body || aws.ToString(a[serverless.AttrSource].StringValue) != serverless.SourceDecode ||
				aws.ToString(a[serverless.AttrSQSMessageID].StringValue) != rec.MessageId ||
				aws.ToString(a[serverless.AttrReceiveCount].StringValue) != "2" {
				t.Fatalf("dead letter = %q %v", aws.ToString(m.Body), a)
			}
			r := aws.ToString(a[serverless.AttrReason].StringValue)
			if !strings.HasPrefix(r, "bad message: malformed JSON\uFFFD near \uFFFD x") || len(r) > 2048 {
				t.Fatalf("reason attribute = %.80q... (%d bytes)", r, len(r))
			}
			if fifo && m.Attributes["MessageGroupId"] != "thread-x" {
				t.Fatalf("group = %q, want the record's group", m.Attributes["MessageGroupId"])
			}
		})
	}
}

// A record whose body is near the queue's maximum message size is still
// moved: SQS (and fauxqs) count every attribute's name, data type and
// value in that size, so the attributes that do not fit beside the body
// are left out and the reason is cut to what is left, instead of the send
// failing and the record waiting for the redrive policy.
func TestDeadLetterNearTheSizeLimit(t *testing.T) {
	t.Parallel()
	endpoint := testenv.Need(t, "AGENTSLICE_TEST_SQS_ENDPOINT")
	ctx := context.Background()
	c := sqs.NewFromConfig(awstest.Config(), func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) })
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(awstest.Name(t, "") + ".fifo"),
		Attributes: map[string]string{"FifoQueue": "true"}}) // MaximumMessageSize: the default, 1 MiB
	if err != nil {
		t.Fatal(err)
	}
	url := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	d, err := serverless.NewDeadLetters(c, url)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1 << 20
	reason := "a reason: " + strings.Repeat("r", 3000)
	rooms := []int{400, 150, 0} // bytes left beside the body
	for _, room := range rooms {
		rec := events.SQSMessage{MessageId: fmt.Sprintf("0b1c2d3e-0000-4000-8000-%012d", room), Body: strings.Repeat("b", limit-room),
			Attributes: map[string]string{"MessageGroupId": fmt.Sprintf("big-%d", room), "ApproximateReceiveCount": "1"}}
		if err := d.DeadLetter(ctx, rec, serverless.DeadLetter{Source: serverless.SourceRejected, MessageID: "m-big", Reason: reason}); err != nil {
			t.Fatalf("moving a %d-byte body: %v", len(rec.Body), err)
		}
	}
	got := map[int]types.Message{}
	for len(got) < len(rooms) {
		r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			t.Fatalf("%d of 3 dead letters arrived", len(got))
		}
		for _, m := range r.Messages {
			got[len(aws.ToString(m.Body))] = m
		}
	}
	for room, want := range map[int][]string{
		400: {serverless.AttrSource, serverless.AttrSQSMessageID, serverless.AttrReceiveCount, serverless.AttrMessageID, serverless.AttrReason},
		150: {serverless.AttrSource, serverless.AttrSQSMessageID},
		0:   nil,
	} {
		m, ok := got[limit-room]
		if !ok {
			t.Fatalf("no dead letter with a %d-byte body", limit-room)
		}
		for _, name := range want {
			if _, ok := m.MessageAttributes[name]; !ok {
				t.Errorf("room %d: attribute %s missing from %v", room, name, m.MessageAttributes)
			}
		}
		if room < 400 {
			if _, ok := m.MessageAttributes[serverless.AttrReason]; ok {
				t.Errorf("room %d: a reason attribute that cannot fit", room)
			}
		} else if r := aws.ToString(m.MessageAttributes[serverless.AttrReason].StringValue); !strings.HasPrefix(r, "a reason: r") || len(r) >= 400 {
			t.Errorf("room %d: reason %.40q (%d bytes), want it cut to fit", room, r, len(r))
		}
	}
}
