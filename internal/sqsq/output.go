package sqsq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/agentslice/agentslice/internal/runtime"
)

// OutputVersion is the version of the OutputRecord encoding this package
// writes. DecodeOutput accepts versions 1..OutputVersion.
const OutputVersion = 1

// OutputRecord is the JSON body of a message on the output queue.
type OutputRecord struct {
	V        int    `json:"v"`
	ID       string `json:"id"`
	ThreadID string `json:"thread_id"`
	Kind     string `json:"kind"` // "reply", "error", "notice", "view", ...
	Text     string `json:"text"`
	// Agent and Usage are the replying agent and the thread's cumulative
	// token usage (replies; optional).
	Agent string         `json:"agent,omitempty"`
	Usage *runtime.Usage `json:"usage,omitempty"`
}

// OutputConfig configures an Output.
type OutputConfig struct {
	// URL is the standard output queue's URL. Required.
	URL string
	// MaxMessageBytes is the queue's MaximumMessageSize attribute. Default
	// and upper bound: SQSMaxMessageBytes.
	MaxMessageBytes int
}

// Output sends what agents say to a standard SQS queue as JSON. It
// implements runtime.Output and is safe for concurrent use.
type Output struct {
	api API
	cfg OutputConfig
}

var _ runtime.Output = (*Output)(nil)

// NewOutput returns the sender of the standard queue cfg.URL, using an
// already built client.
func NewOutput(api API, cfg OutputConfig) (*Output, error) {
	if api == nil {
		return nil, errors.New("sqsq: nil SQS client")
	}
	if cfg.URL == "" {
		return nil, errors.New("sqsq: OutputConfig.URL is empty")
	}
	if strings.HasSuffix(cfg.URL, ".fifo") {
		return nil, fmt.Errorf("sqsq: OutputConfig.URL %q is a FIFO queue; the output queue is a standard queue", cfg.URL)
	}
	var err error
	if cfg.MaxMessageBytes, err = checkLimit("OutputConfig.MaxMessageBytes", cfg.MaxMessageBytes); err != nil {
		return nil, err
	}
	return &Output{api: api, cfg: cfg}, nil
}

// Publish sends ev to the output queue. An event that is invalid or too
// large is refused with a permanent error naming the problem.
func (o *Output) Publish(ctx context.Context, ev runtime.OutputEvent) error {
	body, err := EncodeOutput(ev)
	if err != nil {
		return err
	}
	if len(body) > o.cfg.MaxMessageBytes {
		return runtime.Permanent(&TooLargeError{ID: ev.ID, Size: len(body), Limit: o.cfg.MaxMessageBytes, Queue: o.cfg.URL})
	}
	_, err = o.api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(o.cfg.URL), MessageBody: aws.String(body)})
	if err != nil {
		return permanentIfRefused(fmt.Errorf("sqsq: publishing %s %s of thread %s to %s: %w", ev.Kind, ev.ID, ev.ThreadID, o.cfg.URL, err))
	}
	return nil
}

// EncodeOutput returns the SQS body of ev, or a permanent error naming the
// field at fault.
func EncodeOutput(ev runtime.OutputEvent) (string, error) {
	rec := OutputRecord{V: OutputVersion, ID: ev.ID, ThreadID: ev.ThreadID, Kind: ev.Kind, Text: ev.Text, Agent: ev.Agent, Usage: ev.Usage}
	if err := rec.validate(); err != nil {
		return "", runtime.Permanent(err)
	}
	// No HTML escaping: <, > and & stay one byte each (see
	// runtime.EncodeMessage).
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rec); err != nil {
		return "", runtime.Permanent(fmt.Errorf("sqsq: encoding output event %s: %w", ev.ID, err))
	}
	return escapeForSQS(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

func (r *OutputRecord) validate() error {
	bad := func(field, reason string) error {
		return fmt.Errorf("sqsq: output event %q: field %q: %s", r.ID, field, reason)
	}
	switch {
	case r.V < 1 || r.V > OutputVersion:
		return bad("v", fmt.Sprintf("unsupported version %d (this code reads 1..%d)", r.V, OutputVersion))
	case r.ID == "":
		return bad("id", "missing")
	case r.ThreadID == "":
		return bad("thread_id", "missing")
	case r.Kind == "":
		return bad("kind", "missing")
	}
	for _, f := range []struct{ name, v string }{{"id", r.ID}, {"thread_id", r.ThreadID}, {"kind", r.Kind}, {"text", r.Text}} {
		if !utf8.ValidString(f.v) {
			return bad(f.name, "not valid UTF-8")
		}
	}
	return nil
}

// DecodeOutput parses the body of an output queue message (for consumers
// such as the command line's tail). Unknown fields are rejected.
func DecodeOutput(body string) (runtime.OutputEvent, error) {
	var rec OutputRecord
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return runtime.OutputEvent{}, fmt.Errorf("sqsq: malformed output record: %w", err)
	}
	if dec.More() {
		return runtime.OutputEvent{}, errors.New("sqsq: malformed output record: trailing data after the JSON object")
	}
	if err := rec.validate(); err != nil {
		return runtime.OutputEvent{}, err
	}
	return runtime.OutputEvent{ID: rec.ID, ThreadID: rec.ThreadID, Kind: rec.Kind, Text: rec.Text, Agent: rec.Agent, Usage: rec.Usage}, nil
}
