package sqsq

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf16"

	"github.com/agentslice/agentslice/internal/runtime"
)

// SQSMaxMessageBytes is the largest message SQS accepts (1 MiB), and also
// the largest total of one SendMessageBatch request.
const SQSMaxMessageBytes = 1 << 20

// minQueueMessageBytes is the smallest MaximumMessageSize a queue can have.
const minQueueMessageBytes = 1024

// TooLargeError reports a message whose encoded body is larger than the
// queue accepts. It is returned wrapped in runtime.Permanent.
type TooLargeError struct {
	ID    string // message or output event ID
	Size  int    // encoded body size in bytes
	Limit int    // the queue's maximum message size in bytes
	Queue string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("sqsq: message %s is %d bytes encoded, more than the maximum message size of %d bytes of queue %s; it was not sent (messages are never truncated)",
		e.ID, e.Size, e.Limit, e.Queue)
}

// EncodeBody returns the SQS body of m: its JSON encoding (runtime.
// EncodeMessage) with U+FFFE, U+FFFF and every character outside the Basic
// Multilingual Plane written as \u escapes (see escapeForSQS). m is
// validated first; a message that fails validation gets its
// *runtime.BadMessageError.
func EncodeBody(m runtime.Message) (string, error) {
	if m.V == 0 {
		m.V = runtime.MessageVersion
	}
	if err := m.Validate(); err != nil {
		return "", err
	}
	b, err := runtime.EncodeMessage(m)
	if err != nil {
		return "", &runtime.BadMessageError{ID: m.ID, Reason: "cannot encode as JSON: " + err.Error()}
	}
	return escapeForSQS(b), nil
}

// escapeForSQS rewrites a JSON document so that SQS accepts it as a body.
// SQS refuses U+FFFE and U+FFFF, which JSON encoders leave raw. Characters
// outside the Basic Multilingual Plane (emoji, most of all) are allowed by
// SQS but refused by fauxqs 1.9.2, the local stand-in (its check works on
// UTF-16 code units), so they are escaped as surrogate pairs too: a body is
// then accepted by both, and any JSON decoder reads back the same text.
// Outside strings a JSON document holds only ASCII, so every rewritten
// character is inside a string, where the escape means the same thing.
func escapeForSQS(b []byte) string {
	i := bytes.IndexFunc(b, func(r rune) bool { return r >= 0xFFFE })
	if i < 0 {
		return string(b)
	}
	var out strings.Builder
	out.Grow(len(b) + 16)
	out.Write(b[:i])
	for _, r := range string(b[i:]) {
		switch {
		case r == 0xFFFE || r == 0xFFFF:
			fmt.Fprintf(&out, `\u%04x`, r)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&out, `\u%04x\u%04x`, hi, lo)
		default:
			out.WriteRune(r)
		}
	}
	return out.String()
}

// checkLimit validates a queue's configured maximum message size.
func checkLimit(field string, n int) (int, error) {
	switch {
	case n == 0:
		return SQSMaxMessageBytes, nil
	case n < minQueueMessageBytes || n > SQSMaxMessageBytes:
		return 0, fmt.Errorf("sqsq: %s is %d; SQS queues accept a maximum message size from %d to %d bytes",
			field, n, minQueueMessageBytes, SQSMaxMessageBytes)
	}
	return n, nil
}
