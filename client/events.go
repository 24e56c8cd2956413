package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Event is one event of an event stream. Kind says which fields are set;
// agentslice's docs/serve.md lists the kinds (message, turn, tool_call,
// tool_result, state, delta, reply, error, ...).
type Event struct {
	ID       string `json:"id"`
	ThreadID string `json:"thread_id"`
	Kind     string `json:"kind"`
	// Seq is, for history events, the stream's resume cursor (pass it as
	// EventOptions.After); 0 for live-only events.
	Seq       int    `json:"seq,omitempty"`
	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
	Tool      string `json:"tool,omitempty"`
	CallID    string `json:"call_id,omitempty"`
	Args      string `json:"args,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	Usage     *Usage `json:"usage,omitempty"`
	Child     string `json:"child,omitempty"`
	// Input is the ID of the message a history event consumed.
	Input        string       `json:"input,omitempty"`
	Choice       *Choice      `json:"choice,omitempty"`
	CompletionID string       `json:"completion_id,omitempty"`
	Index        int          `json:"index,omitempty"`
	State        *StateChange `json:"state,omitempty"`
	// Raw is the event's data as the server sent it.
	Raw json.RawMessage `json:"-"`
}

// StateChange is a thread's status after a commit ("state" events).
type StateChange struct {
	Status string `json:"status"`
	// Reason says why a thread is failed or waiting for its provider.
	Reason  string `json:"reason,omitempty"`
	Version int64  `json:"version"`
}

// EventOptions select what a stream sends.
type EventOptions struct {
	// After resumes a thread's stream after this cursor (an event's Seq):
	// history after it is replayed first. 0 with Resume unset starts a
	// fresh stream: the whole history, then the current views.
	After int
	// Resume sends After even when it is 0: history from the start, but
	// without the fresh stream's views and dead letters.
	Resume bool
	// Kinds keeps only these kinds (all when empty).
	Kinds []string
}

// Stream is an open event stream. Close it when done.
type Stream struct {
	body io.ReadCloser
	r    *bufio.Reader
	// LastSeq is the cursor of the last history event read.
	LastSeq int
}

// ErrDropped is returned by Next when the server dropped the stream for
// falling behind; reconnect with After set to LastSeq.
var ErrDropped = errors.New("client: the server dropped this event stream (it fell behind); resume from its last cursor")

// Events opens the event stream of a thread (every thread's when thread is
// ""). The stream is live once Events returns.
func (c *Client) Events(ctx context.Context, thread string, opts EventOptions) (*Stream, error) {
	path := "/events"
	if thread != "" {
		path = "/threads/" + url.PathEscape(thread) + "/events"
	}
	q := url.Values{}
	if opts.After > 0 || opts.Resume {
		q.Set("after", strconv.Itoa(opts.After))
	}
	if len(opts.Kinds) > 0 {
		q.Set("kinds", strings.Join(opts.Kinds, ","))
	}
	resp, err := c.do(ctx, http.MethodGet, path, q, nil, http.Header{"Accept": {"text/event-stream"}})
	if err != nil {
		return nil, err
	}
	s := &Stream{body: resp.Body, r: bufio.NewReader(resp.Body)}
	// The server's first line is a comment sent once the subscription is
	// live: wait for it, so that what happens after Events returns is seen.
	if _, err := s.r.Peek(1); err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("client: opening the event stream %s: %w", path, err)
	}
	return s, nil
}

// Next returns the next event, io.EOF when the server ended the stream,
// or ErrDropped.
func (s *Stream) Next() (Event, error) {
	var kind string
	var data strings.Builder
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return Event{}, io.EOF
			}
			return Event{}, fmt.Errorf("client: reading the event stream: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if data.Len() == 0 {
				kind = ""
				continue // a comment's end, or a keep-alive
			}
			if kind == "dropped" {
				return Event{}, ErrDropped
			}
			raw := json.RawMessage(data.String())
			var ev Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				return Event{}, fmt.Errorf("client: decoding a %q event: %w", kind, err)
			}
			if ev.Kind == "" {
				ev.Kind = kind
			}
			ev.Raw = raw
			if ev.Seq > s.LastSeq {
				s.LastSeq = ev.Seq
			}
			return ev, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event:"):
			kind = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

// Close ends the stream.
func (s *Stream) Close() error { return s.body.Close() }
