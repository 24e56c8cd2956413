package lambdafn_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/raptest"
)

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
		resp, err := lambdafn.FunctionURLHandler(rc, raptest.QuietLogger())(context.Background(), req)
		if err != nil {
			t.Fatalf("error %v", err)
		}
		if !known[resp.StatusCode] || !json.Valid([]byte(resp.Body)) {
			t.Fatalf("response %d %q", resp.StatusCode, resp.Body)
		}
	})
}
