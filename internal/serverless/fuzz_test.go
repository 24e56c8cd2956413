package serverless_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
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
