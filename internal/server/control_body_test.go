package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestStopWithAnEmptyChunkedBody: stop's body is optional, also when a
// client sends an empty body without a Content-Length (chunked, as Go's
// client does for a non-nil empty reader of unknown length).
func TestStopWithAnEmptyChunkedBody(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Script: testdata(t, "get_time_script.json"), ExampleTools: &ExampleTools{GetTime: true}})
	postMessage(t, srv, "thr_chunked", `{"text":"hello"}`)
	waitIdle(t, srv)
	for name, body := range map[string]string{"empty": "", "blank": "  \n"} {
		req, err := http.NewRequest(http.MethodPost, srv.URL()+"/threads/thr_chunked/stop", struct{ *strings.Reader }{strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1 // unknown: sent chunked
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("%s chunked body: status %d, want 202", name, resp.StatusCode)
		}
	}
}
