package sqsq_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

func loadEvent(t *testing.T, path string) map[string]events.SQSMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	out := map[string]events.SQSMessage{}
	for _, r := range ev.Records {
		out[r.MessageId] = r
	}
	return out
}

func TestDecodeRecord(t *testing.T) {
	recs := loadEvent(t, "testdata/input_event.json")
	long := "t-" + strings.Repeat("x", 200)
	tests := []struct {
		record string
		want   runtime.Message // for good records
		field  string          // BadMessageError.Field for bad ones
		reason string          // a substring of the reason
	}{
		// Not stamped by its sender: SQS's SentTimestamp is its arrival.
		{record: "ok-user", want: runtime.Message{V: 1, ID: "m1", ThreadID: "t-1", Kind: runtime.KindUser, Text: "héllo ✓", At: 1767225600000}},
		{record: "ok-wake", want: runtime.Message{V: 1, ID: "wake-1", ThreadID: "t-1", Kind: runtime.KindWake, ToolCallID: "call_abc", Text: "\uffff", At: 1767225600000}},
		{record: "ok-long-thread", want: runtime.Message{V: 1, ID: "m2", ThreadID: long, Kind: runtime.KindUser, Text: "hi"}},
		{record: "bad-json", reason: "malformed JSON"},
		{record: "bad-unknown-field", reason: `unknown field "colour"`},
		{record: "bad-kind", field: "kind", reason: "unknown kind"},
		{record: "bad-missing-call", field: "tool_call_id", reason: "missing"},
		{record: "bad-version", field: "v", reason: "unsupported version 7"},
		{record: "bad-group", field: "thread_id", reason: `record's MessageGroupId is "t-1"`},
		{record: "bad-no-group", reason: "no MessageGroupId"},
		{record: "bad-trailing", reason: "trailing data"},
	}
	for _, tc := range tests {
		t.Run(tc.record, func(t *testing.T) {
			t.Parallel()
			rec, ok := recs[tc.record]
			if !ok {
				t.Fatalf("no record %s in testdata", tc.record)
			}
			m, err := sqsq.DecodeRecord(rec)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if m.ID != tc.want.ID || m.ThreadID != tc.want.ThreadID || m.Kind != tc.want.Kind || m.Text != tc.want.Text || m.ToolCallID != tc.want.ToolCallID ||
					(tc.want.At != 0 && m.At != tc.want.At) {
					t.Fatalf("decoded %+v, want %+v", m, tc.want)
				}
				return
			}
			var bad *runtime.BadMessageError
			if !errors.As(err, &bad) || !runtime.IsPermanent(err) {
				t.Fatalf("err %v, want a BadMessageError", err)
			}
			if bad.Field != tc.field || !strings.Contains(bad.Reason, tc.reason) {
				t.Fatalf("field %q reason %q, want field %q reason containing %q", bad.Field, bad.Reason, tc.field, tc.reason)
			}
			if !strings.Contains(err.Error(), tc.record) {
				t.Fatalf("error %q does not name the SQS message ID %s", err, tc.record)
			}
		})
	}
}

// TestDecodeRecordKeepsTheSendersArrival: a message its sender stamped
// (the RAP receiver does, when it accepts a callback) keeps that arrival,
// the earlier one, instead of SQS's SentTimestamp; a record without
// SentTimestamp leaves an unstamped message unstamped.
func TestDecodeRecordKeepsTheSendersArrival(t *testing.T) {
	t.Parallel()
	rec := events.SQSMessage{MessageId: "s1", Body: `{"v":1,"id":"r1","thread_id":"t-1","kind":"user","text":"x","at":"2026-01-01T00:00:05.000Z"}`,
		Attributes: map[string]string{"MessageGroupId": sqsq.GroupID("t-1"), "SentTimestamp": "1767225609000"}}
	m, err := sqsq.DecodeRecord(rec)
	if err != nil || m.At != 1767225605000 {
		t.Fatalf("decoded at %v (%v), want the sender's 1767225605000", m.At, err)
	}
	rec.Body = `{"v":1,"id":"r1","thread_id":"t-1","kind":"user","text":"x"}`
	delete(rec.Attributes, "SentTimestamp")
	if m, err = sqsq.DecodeRecord(rec); err != nil || m.At != 0 {
		t.Fatalf("decoded at %v (%v), want none", m.At, err)
	}
}

func TestFirstDelivery(t *testing.T) {
	recs := loadEvent(t, "testdata/input_event.json")
	if !sqsq.FirstDelivery(recs["ok-user"]) || sqsq.FirstDelivery(recs["ok-wake"]) || sqsq.ReceiveCount(recs["ok-wake"]) != 3 {
		t.Fatal("receive counts misread")
	}
	if sqsq.FirstDelivery(events.SQSMessage{}) {
		t.Fatal("a record without a receive count is not a first delivery")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, r := range loadEventF(f, "testdata/input_event.json") {
		f.Add(r.Body, r.Attributes["MessageGroupId"])
	}
	f.Fuzz(func(t *testing.T, body, group string) {
		rec := events.SQSMessage{MessageId: "fuzz", Body: body, Attributes: map[string]string{"MessageGroupId": group}}
		m, err := sqsq.DecodeRecord(rec)
		if err != nil {
			var bad *runtime.BadMessageError
			if !errors.As(err, &bad) {
				t.Fatalf("error is not a BadMessageError: %v", err)
			}
			return
		}
		if sqsq.GroupID(m.ThreadID) != group {
			t.Fatalf("accepted thread %q in group %q", m.ThreadID, group)
		}
		// What was accepted must survive a send: encode and decode again.
		again, err := sqsq.EncodeBody(m)
		if err != nil {
			t.Fatalf("accepted message does not encode: %v", err)
		}
		m2, err := sqsq.DecodeRecord(events.SQSMessage{Body: again, Attributes: rec.Attributes})
		if err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		b1, _ := json.Marshal(m)
		b2, _ := json.Marshal(m2)
		if string(b1) != string(b2) {
			t.Fatalf("round trip changed the message:\n%s\n%s", b1, b2)
		}
	})
}

func loadEventF(f *testing.F, path string) []events.SQSMessage {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		f.Fatal(err)
	}
	return ev.Records
}

func TestIDs(t *testing.T) {
	long := strings.Repeat("a", 129)
	tests := []struct {
		name, thread, id string
		group, dedup     string // "" means: hashed
	}{
		{"plain", "thread-1", "msg-1", "thread-1", "thread-1:msg-1"},
		{"punctuation", "t!#$%&'()*+,-./;<=>?@[\\]^_`{|}~", "m", "t!#$%&'()*+,-./;<=>?@[\\]^_`{|}~", "t!#$%&'()*+,-./;<=>?@[\\]^_`{|}~:m"},
		{"long thread", long, "m", "", ""},
		{"128 chars", strings.Repeat("a", 128), "m", strings.Repeat("a", 128), ""},
		{"unicode", "thréad", "m", "", ""},
		{"colon in thread", "a:b", "c", "a:b", ""},
		{"unicode id", "t", "mé", "t", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, d := sqsq.GroupID(tc.thread), sqsq.DedupID(tc.thread, tc.id)
			for _, c := range []struct{ what, got, want, prefix string }{{"group", g, tc.group, "g_"}, {"dedup", d, tc.dedup, "d_"}} {
				if c.want != "" && c.got != c.want {
					t.Errorf("%s ID %q, want %q", c.what, c.got, c.want)
				}
				if c.want == "" && (!strings.HasPrefix(c.got, c.prefix) || len(c.got) != 28) {
					t.Errorf("%s ID %q, want a hash", c.what, c.got)
				}
				if len(c.got) > 128 || strings.ContainsFunc(c.got, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
					t.Errorf("%s ID %q is not a valid SQS ID", c.what, c.got)
				}
			}
		})
	}
	if sqsq.DedupID("a", "b:c") == sqsq.DedupID("a:b", "c") {
		t.Fatal("dedup IDs of different (thread, message) pairs collide")
	}
	if sqsq.DedupID("t1", "m") == sqsq.DedupID("t2", "m") {
		t.Fatal("the same message ID in two threads must get two dedup IDs")
	}
	if sqsq.GroupID(long) != sqsq.GroupID(long) || sqsq.DedupID(long, "x") != sqsq.DedupID(long, "x") {
		t.Fatal("IDs are not deterministic")
	}
}

func TestEncodeBody(t *testing.T) {
	m := runtime.Message{ID: "m", ThreadID: "t", Kind: runtime.KindUser, Text: "a\uFFFEb\uFFFFc<tag> 😀 é"}
	body, err := sqsq.EncodeBody(m)
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(body, "\uFFFE\uFFFF😀") || !strings.Contains(body, `a\ufffeb\uffffc<tag> \ud83d\ude00 é`) {
		t.Fatalf("body %q still holds characters SQS refuses", body)
	}
	back, err := runtime.DecodeMessage([]byte(body))
	if err != nil || back.Text != m.Text || back.V != runtime.MessageVersion {
		t.Fatalf("decoded %+v, %v", back, err)
	}
	_, err = sqsq.EncodeBody(runtime.Message{ID: "m", ThreadID: "t", Kind: runtime.KindUser})
	var bad *runtime.BadMessageError
	if !errors.As(err, &bad) || bad.Field != "text" {
		t.Fatalf("empty user message: %v", err)
	}
}

// TestBodiesDoNotGrowByEscaping: a tool result of markup (the 300
// KB example) costs one byte per byte in a queue body, message or output
// event; json.Marshal's HTML escaping made it 1.3 MB and unsendable.
func TestBodiesDoNotGrowByEscaping(t *testing.T) {
	markup := strings.Repeat("<div class=\"a&b\"><p>x</p></div>\n", 300<<10/32)
	m := runtime.Message{ID: "r", ThreadID: "t", Kind: runtime.KindToolResult, ToolCallID: "c", Text: markup}
	body, err := sqsq.EncodeBody(m)
	if err != nil {
		t.Fatal(err)
	}
	// Only the quotes and newlines are escaped (2 bytes each).
	want := len(markup) + strings.Count(markup, `"`) + strings.Count(markup, "\n")
	if len(body) > want+200 || strings.Contains(body, `\u003c`) {
		t.Fatalf("message body is %d bytes for %d bytes of markup (want about %d)", len(body), len(markup), want)
	}
	if back, err := runtime.DecodeMessage([]byte(body)); err != nil || back.Text != markup {
		t.Fatalf("round trip: %v", err)
	}
	out, err := sqsq.EncodeOutput(runtime.OutputEvent{ID: "o", ThreadID: "t", Kind: "reply", Text: markup})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > want+200 || strings.Contains(out, `\u003c`) {
		t.Fatalf("output body is %d bytes for %d bytes of markup", len(out), len(markup))
	}
	if back, err := sqsq.DecodeOutput(out); err != nil || back.Text != markup {
		t.Fatalf("output round trip: %v", err)
	}
}

func TestOutputRecord(t *testing.T) {
	ev := runtime.OutputEvent{ID: "o1", ThreadID: "t", Kind: "reply", Text: "done \uFFFF 🎉"}
	body, err := sqsq.EncodeOutput(ev)
	if err != nil {
		t.Fatal(err)
	}
	if body != `{"v":1,"id":"o1","thread_id":"t","kind":"reply","text":"done \uffff \ud83c\udf89"}` {
		t.Fatalf("body %s", body)
	}
	back, err := sqsq.DecodeOutput(body)
	if err != nil || back != ev {
		t.Fatalf("decoded %+v %v", back, err)
	}
	for _, tc := range []struct {
		ev    runtime.OutputEvent
		field string
	}{
		{runtime.OutputEvent{ThreadID: "t", Kind: "reply"}, `"id"`},
		{runtime.OutputEvent{ID: "o", Kind: "reply"}, `"thread_id"`},
		{runtime.OutputEvent{ID: "o", ThreadID: "t"}, `"kind"`},
		{runtime.OutputEvent{ID: "o", ThreadID: "t", Kind: "reply", Text: "\xff"}, `"text"`},
	} {
		_, err := sqsq.EncodeOutput(tc.ev)
		if err == nil || !runtime.IsPermanent(err) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("EncodeOutput(%+v) = %v, want a permanent error naming %s", tc.ev, err, tc.field)
		}
	}
	for _, body := range []string{`{"v":1,"id":"o","thread_id":"t","kind":"reply","text":"x","extra":1}`, `{"v":2,"id":"o","thread_id":"t","kind":"reply"}`, `[`} {
		if _, err := sqsq.DecodeOutput(body); err == nil {
			t.Errorf("DecodeOutput(%s) accepted", body)
		}
	}
}
