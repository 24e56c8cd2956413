package serverless_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
	"github.com/agentslice/agentslice/internal/serverless"
)

// FuzzHandle feeds batches of arbitrary records (bodies and groups from the
// fuzzer) to the handler and checks its accounting: every record is either
// dead-lettered, or given to a slice, or reported (a group whose
// dead-letter send failed), never two of these, and only records of the
// batch are reported.
func FuzzHandle(f *testing.F) {
	f.Add("A", `{"v":1,"id":"m1","thread_id":"A","kind":"user","text":"hi"}`, "B", "{", "A", `{"v":1,"id":"m2","thread_id":"A","kind":"wake"}`, uint8(0))
	f.Add("", `{"v":1,"id":"m1","thread_id":"","kind":"user","text":"hi"}`, "A", `{"v":2}`, "A", `null`, uint8(3))
	f.Add("A", `{"v":1,"id":"m1","thread_id":"A","kind":"user","text":"hi","extra":1}`, "A", `{"v":1,"id":"m1","thread_id":"A","kind":"user","text":"hi"}`, "C", "", uint8(5))
	f.Fuzz(func(t *testing.T, g1, b1, g2, b2, g3, b3 string, failMask uint8) {
		recs := []events.SQSMessage{rec("r1", g1, b1, 1), rec("r2", g2, b2, 2), rec("r3", g3, b3, 1)}
		d := &fakeDLQ{failFor: map[string]bool{}}
		r := &fakeRunner{fail: map[string]error{}}
		for i, rc := range recs {
			if failMask&(1<<i) != 0 {
				d.failFor[rc.MessageId] = true
			}
		}
		if failMask&8 != 0 {
			r.fail[g1] = errors.New("transient")
		}
		resp, err := newHandler(r, d, &bytes.Buffer{}).Handle(context.Background(), events.SQSEvent{Records: recs})
		if err != nil {
			t.Fatal(err)
		}
		reported := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			if reported[f.ItemIdentifier] {
				t.Fatalf("%s reported twice", f.ItemIdentifier)
			}
			reported[f.ItemIdentifier] = true
		}
		sliced := 0
		for _, c := range r.calls {
			sliced += len(c.Messages)
		}
		for _, rc := range recs {
			_, dead := d.got[rc.MessageId]
			if dead && reported[rc.MessageId] {
				t.Fatalf("%s was dead-lettered and reported", rc.MessageId)
			}
		}
		if n := len(d.got) + len(reported); n > len(recs) || (n+sliced < len(recs)) {
			t.Fatalf("%d dead-lettered, %d reported, %d sliced, of %d records", len(d.got), len(reported), sliced, len(recs))
		}
		for id := range reported {
			if id != "r1" && id != "r2" && id != "r3" {
				t.Fatalf("reported unknown record %q", id)
			}
		}
	})
}

// FuzzFunctionURLHandler sends arbitrary requests to the receiver's handler:
// it must answer with a known status and a JSON body, and never return an
// error.
func FuzzFunctionURLHandler(f *testing.F) {
	keys, err := rap.ParseKeyring("k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", 32))))
	if err != nil {
		f.Fatal(err)
	}
	signed, _ := (&rap.Signer{Keys: keys, BaseURL: "https://x.example/"}).CallbackURL("thread-1", "call-1")
	f.Add("POST", signed[strings.Index(signed, "?")+1:], `{"type":"tool_result","id":"call-1","group_id":"thread-1","text":"ok"}`, false)
	f.Add("POST", "t=a&c=b", "{}", true)
	f.Add("GET", "%zz", "", false)
	known := map[int]bool{200: true, 400: true, 403: true, 404: true, 405: true, 410: true, 413: true, 503: true}
	f.Fuzz(func(t *testing.T, method, query, body string, b64 bool) {
		rc, err := rap.NewReceiver(rap.ReceiverConfig{Keys: keys, Queue: &recQueue{}, Logger: raptest.QuietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		req := events.LambdaFunctionURLRequest{RawQueryString: query, Body: body, IsBase64Encoded: b64}
		req.RequestContext.HTTP.Method = method
		resp, err := serverless.FunctionURLHandler(rc, raptest.QuietLogger())(context.Background(), req)
		if err != nil {
			t.Fatalf("error %v", err)
		}
		if !known[resp.StatusCode] || !json.Valid([]byte(resp.Body)) {
			t.Fatalf("response %d %q", resp.StatusCode, resp.Body)
		}
	})
}
