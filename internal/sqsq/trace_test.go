package sqsq_test

import (
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// The trace context rides in the body; a producer outside the runtime may
// put it in the traceparent message attribute instead, which is then
// validated like the body's.
func TestDecodeRecordTraceparent(t *testing.T) {
	t.Parallel()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	attr := func(v string) map[string]events.SQSMessageAttribute {
		return map[string]events.SQSMessageAttribute{sqsq.TraceAttribute: {DataType: "String", StringValue: &v}}
	}
	rec := func(body string, attrs map[string]events.SQSMessageAttribute) events.SQSMessage {
		return events.SQSMessage{MessageId: "r1", Body: body, Attributes: map[string]string{"MessageGroupId": "t-1"}, MessageAttributes: attrs}
	}
	const plain = `{"v":1,"id":"m1","thread_id":"t-1","kind":"user","text":"hi"}`
	const inBody = `{"v":1,"id":"m1","thread_id":"t-1","kind":"user","text":"hi","traceparent":"` + tp + `"}`
	for name, c := range map[string]struct {
		rec  events.SQSMessage
		want string
		bad  bool
	}{
		"body":                 {rec: rec(inBody, nil), want: tp},
		"attribute":            {rec: rec(plain, attr(tp)), want: tp},
		"body wins":            {rec: rec(inBody, attr("00-11111111111111111111111111111111-2222222222222222-01")), want: tp},
		"none":                 {rec: rec(plain, nil)},
		"bad attribute":        {rec: rec(plain, attr("nonsense")), bad: true},
		"bad body traceparent": {rec: rec(`{"v":1,"id":"m1","thread_id":"t-1","kind":"user","text":"hi","traceparent":"x"}`, nil), bad: true},
	} {
		m, err := sqsq.DecodeRecord(c.rec)
		var bm *runtime.BadMessageError
		switch {
		case c.bad && (!errors.As(err, &bm) || bm.Field != "traceparent"):
			t.Errorf("%s: %v, want a BadMessageError naming traceparent", name, err)
		case !c.bad && (err != nil || m.Trace != c.want):
			t.Errorf("%s: trace %q, %v; want %q", name, m.Trace, err, c.want)
		}
	}
}
