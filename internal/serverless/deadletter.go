package serverless

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/agentslice/agentslice/internal/sqsq"
)

// Message attributes of a record moved to the dead-letter queue.
const (
	AttrReason       = "agentslice.reason"         // why the record can never succeed
	AttrSource       = "agentslice.source"         // SourceDecode or SourceRejected
	AttrSQSMessageID = "agentslice.sqs_message_id" // the record's SQS message ID on the input queue
	AttrReceiveCount = "agentslice.receive_count"  // its ApproximateReceiveCount
	AttrMessageID    = "agentslice.message_id"     // the runtime message ID, when the body had one
)

// Values of AttrSource.
const (
	SourceDecode   = "decode"   // sqsq.DecodeRecord failed: malformed body, unknown kind, wrong group
	SourceRejected = "rejected" // the engine rejected the message (SliceResult.Rejected)
)

// maxReasonBytes bounds the reason attribute; the full error is in the log.
const maxReasonBytes = 2048

// ungroupedID is the MessageGroupId a record without one gets on a FIFO
// dead-letter queue.
const ungroupedID = "agentslice-ungrouped"

// DeadLetter says why a record is moved to the dead-letter queue.
type DeadLetter struct {
	Source    string
	MessageID string // the runtime message ID, "" when unknown
	Reason    string
}

// DeadLetterer moves a record that can never succeed out of its queue.
type DeadLetterer interface {
	DeadLetter(ctx context.Context, rec events.SQSMessage, dl DeadLetter) error
}

// SendAPI is the part of *sqs.Client DeadLetters uses.
type SendAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// DeadLetters sends records to the input queue's dead-letter queue: the
// body unchanged, the reason and the record's identity as message
// attributes. On a FIFO dead-letter queue (the input queue is FIFO, so its
// redrive target must be too) the record keeps its MessageGroupId and gets
// the deduplication ID "dlq-" + its SQS message ID, so a retried move is
// deduplicated.
type DeadLetters struct {
	api  SendAPI
	url  string
	fifo bool
}

var _ DeadLetterer = (*DeadLetters)(nil)

// NewDeadLetters returns the sender to the queue at url.
func NewDeadLetters(api SendAPI, url string) (*DeadLetters, error) {
	if api == nil {
		return nil, errors.New("serverless: nil SQS client for the dead-letter queue")
	}
	if url == "" {
		return nil, errors.New("serverless: empty dead-letter queue URL")
	}
	return &DeadLetters{api: api, url: url, fifo: strings.HasSuffix(url, ".fifo")}, nil
}

// DeadLetter sends rec to the dead-letter queue.
func (d *DeadLetters) DeadLetter(ctx context.Context, rec events.SQSMessage, dl DeadLetter) error {
	str := func(v string) types.MessageAttributeValue {
		return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	attrs := map[string]types.MessageAttributeValue{
		AttrReason:       str(attrText(dl.Reason)),
		AttrSource:       str(dl.Source),
		AttrSQSMessageID: str(attrText(rec.MessageId)),
		AttrReceiveCount: {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(sqsq.ReceiveCount(rec)))},
	}
	if dl.MessageID != "" {
		attrs[AttrMessageID] = str(attrText(dl.MessageID))
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(d.url), MessageBody: aws.String(rec.Body), MessageAttributes: attrs}
	if d.fifo {
		group := rec.Attributes["MessageGroupId"]
		if group == "" {
			group = ungroupedID
		}
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(sqsq.DedupID("dlq", rec.MessageId))
	}
	if _, err := d.api.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("serverless: moving SQS message %s to the dead-letter queue %s: %w", rec.MessageId, d.url, err)
	}
	return nil
}

// attrText makes s a valid SQS attribute value: characters SQS refuses (and
// those outside the Basic Multilingual Plane, which fauxqs refuses) become
// U+FFFD, and it is cut to maxReasonBytes. An empty value becomes "-"
// (SQS refuses empty attribute values).
func attrText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len()+utf8.RuneLen(r) > maxReasonBytes {
			break
		}
		switch {
		case r == '\t' || r == '\n' || r == '\r',
			r >= 0x20 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD:
			b.WriteRune(r)
		default:
			b.WriteRune(utf8.RuneError)
		}
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}
