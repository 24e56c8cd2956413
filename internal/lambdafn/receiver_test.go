package lambdafn_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/tidwall/gjson"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// recQueue records what the receiver enqueues, or fails with err. (The
// receiver's real queue, sqsq.Queue on fauxqs, runs in
// TestSliceFunctionInProcess.)
type recQueue struct {
	mu   sync.Mutex
	msgs []runtime.Message
	err  error
}

func (q *recQueue) Send(_ context.Context, msgs ...runtime.Message) error {
	if q.err != nil {
		return q.err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, msgs...)
	return nil
}

func TestFunctionURLHandler(t *testing.T) {
	t.Parallel()
	keys, err := rap.ParseKeyring("k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", 32))))
	if err != nil {
		t.Fatal(err)
	}
	signer := &rap.Signer{Keys: keys, BaseURL: "https://abc.lambda-url.us-east-1.on.aws/callback"}
	signed, err := signer.CallbackURL("thread-1", "call-1")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(signed)
	validQuery := u.RawQuery
	raw, err := os.ReadFile("testdata/function_url_request.json")
	if err != nil {
		t.Fatal(err)
	}
	base := func(t *testing.T) events.LambdaFunctionURLRequest {
		var req events.LambdaFunctionURLRequest
		if err := json.Unmarshal(raw, &req); err != nil {
			t.Fatal(err)
		}
		req.RawQueryString = validQuery
		return req
	}
	tests := []struct {
		name       string
		edit       func(*events.LambdaFunctionURLRequest)
		queueErr   error
		wantStatus int
		wantBody   string
		enqueued   bool
		// kind is the kind of the enqueued message (default: a result).
		kind runtime.Kind
		// errorResult: an authentic but unusable body enqueues an error
		// result for the signed call (rap.Receiver.Accept).
		errorResult bool
	}{
		{name: "accepted", wantStatus: 200, wantBody: "accepted", enqueued: true},
		{name: "base64 body", edit: func(r *events.LambdaFunctionURLRequest) {
			r.Body, r.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(r.Body)), true
		}, wantStatus: 200, enqueued: true},
		{name: "forged signature", edit: func(r *events.LambdaFunctionURLRequest) {
			r.RawQueryString = strings.Replace(r.RawQueryString, "t=thread-1", "t=thread-2", 1)
		}, wantStatus: 403, wantBody: "signature"},
		{name: "no signature", edit: func(r *events.LambdaFunctionURLRequest) { r.RawQueryString = "" }, wantStatus: 403},
		{name: "cross-thread body", edit: func(r *events.LambdaFunctionURLRequest) {
			r.Body = strings.Replace(r.Body, "thread-1", "thread-2", 1)
		}, wantStatus: 403, wantBody: "group_id"},
		{name: "malformed body", edit: func(r *events.LambdaFunctionURLRequest) { r.Body = "{" }, wantStatus: 400, enqueued: true, errorResult: true},
		{name: "bad base64", edit: func(r *events.LambdaFunctionURLRequest) { r.IsBase64Encoded = true; r.Body = "%%%" }, wantStatus: 400},
		{name: "GET", edit: func(r *events.LambdaFunctionURLRequest) { r.RequestContext.HTTP.Method = "GET" }, wantStatus: 405},
		// Authentic but too large: a 413 and an error result for the call.
		{name: "too large", edit: func(r *events.LambdaFunctionURLRequest) { r.Body = strings.Repeat(" ", rap.MaxCallbackBody+1) }, wantStatus: 413, enqueued: true, errorResult: true},
		{name: "too large and forged", edit: func(r *events.LambdaFunctionURLRequest) {
			r.Body = strings.Repeat(" ", rap.MaxCallbackBody+1)
			r.RawQueryString = strings.Replace(r.RawQueryString, "t=thread-1", "t=thread-2", 1)
		}, wantStatus: 403},
		{name: "queue down", queueErr: errors.New("SQS unavailable"), wantStatus: 503, wantBody: "retry"},
		// Issue 14: a callback too large for the queue is never answered as
		// retryable, however the sender wraps it.
		{name: "too large for the queue", queueErr: runtime.Permanent(fmt.Errorf("sending: %w",
			&sqsq.TooLargeError{ID: "m", Size: 1_300_000, Limit: 1 << 20, Queue: "q"})), wantStatus: 413, wantBody: "1300000"},
		{name: "too large, unwrapped", queueErr: &sqsq.TooLargeError{ID: "m", Size: 2 << 20, Limit: 1 << 20, Queue: "q"}, wantStatus: 413},
		{name: "permanent queue refusal", queueErr: runtime.Permanent(errors.New("refused")), wantStatus: 413},
		// view_update and user_choice go to the thread's history, as in
		// serve: enqueued like results (lambdafn.ReceiverFor).
		{name: "view_update", edit: func(r *events.LambdaFunctionURLRequest) {
			r.Body = `{"type":"view_update","group_id":"thread-1","view_type":"progress","content":{"pct":50}}`
		}, wantStatus: 200, enqueued: true, kind: runtime.KindView},
		{name: "user_choice", edit: func(r *events.LambdaFunctionURLRequest) {
			r.Body = `{"type":"user_choice","group_id":"thread-1","id":"call-1","prompt":"Deploy?","choices":["yes","no"],"default":0,"response_url":"https://tools.example.com/choice"}`
		}, wantStatus: 200, enqueued: true, kind: runtime.KindNotice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := &recQueue{err: tt.queueErr}
			rc, err := rap.NewReceiver(lambdafn.ReceiverFor(keys, q, lambdafn.Options{Logger: raptest.QuietLogger()}))
			if err != nil {
				t.Fatal(err)
			}
			req := base(t)
			if tt.edit != nil {
				tt.edit(&req)
			}
			resp, err := lambdafn.FunctionURLHandler(rc, raptest.QuietLogger())(context.Background(), req)
			if err != nil {
				t.Fatalf("the handler returned an error (Lambda would answer a bare 502): %v", err)
			}
			if resp.StatusCode != tt.wantStatus || !strings.Contains(resp.Body, tt.wantBody) || resp.Headers["Content-Type"] != "application/json" {
				t.Fatalf("response = %d %q %v, want %d containing %q", resp.StatusCode, resp.Body, resp.Headers, tt.wantStatus, tt.wantBody)
			}
			if resp.StatusCode != 200 && !json.Valid([]byte(resp.Body)) {
				t.Fatalf("error body is not JSON: %q", resp.Body)
			}
			if got := len(q.msgs) == 1; got != tt.enqueued {
				t.Fatalf("enqueued %d messages", len(q.msgs))
			}
			if tt.errorResult {
				if m := q.msgs[0]; m.Kind != runtime.KindToolResult || !m.IsError || m.ThreadID != "thread-1" || m.ToolCallID != "call-1" {
					t.Fatalf("enqueued %+v, want an error result for the signed call", m)
				}
			} else if tt.kind == runtime.KindView {
				if m := q.msgs[0]; m.Kind != runtime.KindView || m.ThreadID != "thread-1" || m.ToolCallID != "call-1" ||
					m.Text != `{"view_type":"progress","content":{"pct":50}}` {
					t.Fatalf("enqueued %+v, want the view", m)
				}
			} else if tt.kind == runtime.KindNotice {
				if m := q.msgs[0]; m.Kind != runtime.KindNotice || m.ToolCallID != "call-1" ||
					gjson.Get(m.Choice, "response_url").Str != "https://tools.example.com/choice" || !strings.Contains(m.Text, "Deploy?") {
					t.Fatalf("enqueued %+v, want the notice carrying the choice", m)
				}
			} else if tt.enqueued {
				m := q.msgs[0]
				if m.Kind != runtime.KindToolResult || m.ThreadID != "thread-1" || m.ToolCallID != "call-1" || m.Text != "It is noon." {
					t.Fatalf("enqueued %+v", m)
				}
			}
		})
	}
}
