package rap

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestDispatcherStatus follows the spec's table: alive true/false, 4xx and
// unparsable 2xx are dead, 5xx and transport errors are unknown. The
// request goes to {base}/tool_call_status with thread_id and tool_call_id.
func TestDispatcherStatus(t *testing.T) {
	t.Parallel()
	rig := newCallbackRig(t, nil)
	d, err := NewDispatcher(DispatcherConfig{Signer: rig.signer, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	cases := []struct {
		name   string
		status int
		body   string
		want   runtime.CallStatus
	}{
		{"alive", 200, `{"alive":true}`, runtime.StatusAlive},
		{"not alive", 200, `{"alive":false}`, runtime.StatusDead},
		{"predates the endpoint", 404, `not found`, runtime.StatusDead},
		{"forbidden", 403, ``, runtime.StatusDead},
		{"unparsable 2xx", 200, `OK`, runtime.StatusDead},
		{"2xx without alive", 200, `{}`, runtime.StatusDead},
		{"5xx", 503, `busy`, runtime.StatusUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var b ToolCallStatus
				raw, _ := io.ReadAll(r.Body)
				if r.URL.Path != "/base"+ToolCallStatusPath || json.Unmarshal(raw, &b) != nil || b.ThreadID != "thr_1" || b.ToolCallID != "call_1" ||
					r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("request %s %s", r.URL.Path, raw)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			got, err := d.Status(context.Background(), srv.URL+"/base", "thr_1", "call_1", 5*time.Second)
			if got != tc.want || (got == runtime.StatusUnknown) != (err != nil) {
				t.Fatalf("Status = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		if got, err := d.Status(context.Background(), srv.URL, "thr_1", "call_1", 5*time.Second); got != runtime.StatusUnknown || err == nil {
			t.Fatalf("Status = %v, %v; want unknown", got, err)
		}
	})
}
