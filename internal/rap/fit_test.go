package rap

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// limitQueue refuses, for good, messages whose encoded body exceeds limit
// bytes, as sqsq does with a *TooLargeError wrapped in runtime.Permanent.
type limitQueue struct {
	*recordingQueue
	limit int
}

func (q *limitQueue) Send(ctx context.Context, msgs ...runtime.Message) error {
	for _, m := range msgs {
		b, err := runtime.EncodeMessage(m)
		if err != nil {
			return err
		}
		if len(b) > q.limit {
			return runtime.Permanent(&runtime.BadMessageError{ID: m.ID, Reason: "too large for the queue"})
		}
	}
	return q.recordingQueue.Send(ctx, msgs...)
}

func resultBody(thread, call, text string) string {
	b, _ := json.Marshal(map[string]any{"type": "tool_result", "group_id": thread, "id": call, "text": text})
	return string(b)
}

// TestReceiverLargeResults: a 700 KB markup result arrives whole; a result
// larger than a queue message arrives truncated with a note to the model;
// a queue with a lower limit gets a further-truncated message; the tool is
// never told to retry (5xx) for size.
func TestReceiverLargeResults(t *testing.T) {
	t.Parallel()
	markup := strings.Repeat("<li><a href=x>&amp;</a></li>", 700<<10/28)
	t.Run("700 KB of markup fits", func(t *testing.T) {
		t.Parallel()
		rig := newCallbackRig(t, nil)
		if status, msg := post(t, rig.url(t, "thr_1", "call_1"), resultBody("thr_1", "call_1", markup)); status != 200 {
			t.Fatalf("status %d (%s)", status, msg)
		}
		if m := rig.q.next(t); m.Text != markup {
			t.Fatalf("text of %d bytes arrived as %d bytes", len(markup), len(m.Text))
		}
	})
	t.Run("3 MB is truncated with a note", func(t *testing.T) {
		t.Parallel()
		rig := newCallbackRig(t, nil)
		big := strings.Repeat("\"quoted\" line\n", 3<<20/14)
		if status, msg := post(t, rig.url(t, "thr_1", "call_1"), resultBody("thr_1", "call_1", big)); status != 200 {
			t.Fatalf("status %d (%s)", status, msg)
		}
		m := rig.q.next(t)
		b, _ := runtime.EncodeMessage(m)
		if !strings.HasPrefix(m.Text, "\"quoted\" line\n") || !strings.Contains(m.Text, "too large to deliver whole") ||
			len(b) > runtime.MaxMessageBytes || m.Validate() != nil {
			t.Fatalf("message of %d encoded bytes, text ends %q", len(b), m.Text[len(m.Text)-200:])
		}
	})
	t.Run("content items and images", func(t *testing.T) {
		t.Parallel()
		rig := newCallbackRig(t, nil)
		img := base64.StdEncoding.EncodeToString(make([]byte, 400<<10))
		body, _ := json.Marshal(map[string]any{"type": "tool_result", "group_id": "thr_1", "id": "call_1",
			"content": []map[string]string{{"type": "text", "text": "two images"},
				{"type": "image", "data": img, "mediaType": "image/png"}, {"type": "image", "data": img, "mediaType": "image/png"}}})
		if status, msg := post(t, rig.url(t, "thr_1", "call_1"), string(body)); status != 200 {
			t.Fatalf("status %d (%s)", status, msg)
		}
		m := rig.q.next(t)
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, c := range m.Content {
			kinds = append(kinds, c.Type+":"+c.Text[:min(len(c.Text), 20)])
		}
		got := strings.Join(kinds, "|")
		if got != "text:two images|image:|text:[image omitted: too |text:\n\n[agentslice: this " {
			t.Fatalf("content = %s", got)
		}
	})
	t.Run("a queue with a lower limit", func(t *testing.T) {
		t.Parallel()
		q := &limitQueue{recordingQueue: newRecordingQueue(), limit: 300 << 10}
		rig := newCallbackRig(t, func(c *ReceiverConfig) { c.Queue = q })
		if status, msg := post(t, rig.url(t, "thr_1", "call_1"), resultBody("thr_1", "call_1", markup)); status != 200 {
			t.Fatalf("status %d (%s)", status, msg)
		}
		m := q.next(t)
		if !strings.HasPrefix(m.Text, "<li>") || !strings.Contains(m.Text, "too large to deliver whole") || len(m.Text) > 300<<10 {
			t.Fatalf("text of %d bytes", len(m.Text))
		}
	})
	t.Run("a queue that refuses even an error result", func(t *testing.T) {
		t.Parallel()
		q := &limitQueue{recordingQueue: newRecordingQueue(), limit: 100}
		rig := newCallbackRig(t, func(c *ReceiverConfig) { c.Queue = q })
		status, msg := post(t, rig.url(t, "thr_1", "call_1"), resultBody("thr_1", "call_1", "small"))
		if status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d (%s), want 413: never 5xx for size", status, msg)
		}
	})
}

// TestEncodedLen pins the cost model fitMessage uses against the encoder.
func TestEncodedLen(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"plain", "<a&b>", "\"q\"\\", "tab\tnl\n\x01", "é€", "\u2028"} {
		m := runtime.Message{V: 1, ID: "i", ThreadID: "t", Kind: runtime.KindUser, Text: s}
		b, _ := runtime.EncodeMessage(m)
		m.Text = ""
		empty, _ := runtime.EncodeMessage(m)
		// The empty message omits "text":"" (9 bytes) entirely.
		if got, want := encodedLen(s), len(b)-len(empty)-len(`,"text":""`); got != want {
			t.Errorf("encodedLen(%q) = %d, encoder wrote %d", s, got, want)
		}
	}
}
