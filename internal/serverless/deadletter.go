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
//
// SQS counts message attributes (each name, data type and value) in the
// queue's maximum message size, like the body: the attributes are added
// in order of use (source, SQS message ID, receive count, message ID, then
// the reason, cut to what is left) while they fit in MaxMessageBytes
// beside the unchanged body, so a body near the limit is still moved,
// with fewer attributes (the log line has the whole reason).
type DeadLetters struct {
	api  SendAPI
	url  string
	fifo bool
	// MaxMessageBytes is the dead-letter queue's MaximumMessageSize;
	// default sqsq.SQSMaxMessageBytes (the stack sets every queue's to it).
	MaxMessageBytes int
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
	limit := d.MaxMessageBytes
	if limit <= 0 {
		limit = sqsq.SQSMaxMessageBytes
	}
	if len(rec.Body) > limit {
		return fmt.Errorf("serverless: moving SQS message %s to the dead-letter queue %s: its body of %d bytes is over the queue's maximum message size of %d bytes",
			rec.MessageId, d.url, len(rec.Body), limit)
	}
	attrs := deadLetterAttrs(rec, dl, limit-len(rec.Body))
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

// deadLetterAttrs returns the attributes of a dead-lettered record that
// fit in room bytes, as SQS counts them (name, data type and value of
// each), in order of use; the reason is cut to what is left.
func deadLetterAttrs(rec events.SQSMessage, dl DeadLetter, room int) map[string]types.MessageAttributeValue {
	attrs := map[string]types.MessageAttributeValue{}
	add := func(name, dataType, value string) {
		if n := len(name) + len(dataType) + len(value); n <= room {
			attrs[name] = types.MessageAttributeValue{DataType: aws.String(dataType), StringValue: aws.String(value)}
			room -= n
		}
	}
	add(AttrSource, "String", attrText(dl.Source, maxReasonBytes))
	add(AttrSQSMessageID, "String", attrText(rec.MessageId, maxReasonBytes))
	add(AttrReceiveCount, "Number", strconv.Itoa(sqsq.ReceiveCount(rec)))
	if dl.MessageID != "" {
		add(AttrMessageID, "String", attrText(dl.MessageID, maxReasonBytes))
	}
	if left := room - len(AttrReason) - len("String"); left > 0 {
		add(AttrReason, "String", attrText(dl.Reason, min(left, maxReasonBytes)))
	}
	return attrs
}

// attrText makes s a valid SQS attribute value: characters SQS refuses (and
// those outside the Basic Multilingual Plane, which fauxqs refuses) become
// U+FFFD, and it is cut to limit bytes. An empty value becomes "-"
// (SQS refuses empty attribute values).
func attrText(s string, limit int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r',
			r >= 0x20 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD:
		default:
			r = utf8.RuneError
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			break
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}
