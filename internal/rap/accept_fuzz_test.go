package rap

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// FuzzReceiverAccept drives the callback receiver with arbitrary URL
// queries and bodies. Whatever arrives, nothing is enqueued unless the query
// carries a valid, unexpired signature; what is enqueued belongs to the
// signed thread and call; a refusal enqueues at most one error result for
// the signed call (an authentic but unusable body); and every refusal is a *CallbackError with a 4xx
// status (the queue here never fails, so no refusal is transient). Seeds:
// every body in testdata/callbacks/ under a good, a forged and an expired
// callback URL.
func FuzzReceiverAccept(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	kr, err := NewKeyring(testKey("k1"))
	if err != nil {
		f.Fatal(err)
	}
	other, _ := NewKeyring(testKey("k2"))
	query := func(s *Signer) string {
		raw, err := s.CallbackURL("thr_1", "call_1")
		if err != nil {
			f.Fatal(err)
		}
		u, _ := url.Parse(raw)
		return u.RawQuery
	}
	base := "https://runtime.example.com/rap/callback"
	good := query(&Signer{Keys: kr, BaseURL: base, Now: func() time.Time { return now }})
	forged := query(&Signer{Keys: other, BaseURL: base, Now: func() time.Time { return now }})
	expired := query(&Signer{Keys: kr, BaseURL: base, TTL: time.Minute, Now: func() time.Time { return now.Add(-time.Hour) }})
	entries, err := os.ReadDir(filepath.Join("testdata", "callbacks"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b := readTestdata(f, "callbacks", e.Name())
		for _, q := range []string{good, forged, expired} {
			f.Add(q, b)
		}
	}
	f.Fuzz(func(t *testing.T, rawQuery string, body []byte) {
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			return // net/http would not hand such a query to the handler
		}
		queue := newRecordingQueue()
		rcv, err := NewReceiver(ReceiverConfig{Keys: kr, Queue: queue, Logger: quietLogger(), Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		err = rcv.Accept(context.Background(), q, body)
		capa, verr := kr.Verify(q, now)
		if verr != nil && (err == nil || queue.count() > 0) {
			t.Fatalf("callback accepted (err %v, %d enqueued) with a capability that does not verify: %v", err, queue.count(), verr)
		}
		if err != nil {
			var ce *CallbackError
			if !errors.As(err, &ce) || ce.Status < 400 || ce.Status > 499 {
				t.Fatalf("refusal %v is not a 4xx *CallbackError", err)
			}
			// An authentic but unusable body gets one error result for
			// the signed call, nothing else.
			switch n := queue.count(); {
			case n > 1:
				t.Fatalf("refused callback enqueued %d messages", n)
			case n == 1:
				m := queue.msgs[0]
				if m.ThreadID != capa.ThreadID || m.ToolCallID != capa.CallID || m.Kind != runtime.KindToolResult || !m.IsError {
					t.Fatalf("refused callback enqueued %+v", m)
				}
			}
			return
		}
		for _, m := range queue.msgs {
			if m.ThreadID != capa.ThreadID || m.ToolCallID != capa.CallID {
				t.Fatalf("callback signed for %s/%s enqueued a message for %s/%s", capa.ThreadID, capa.CallID, m.ThreadID, m.ToolCallID)
			}
		}
	})
}
