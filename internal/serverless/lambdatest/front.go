package lambdatest

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// URLInvokeFunc is a function invocation with a Function URL request: a
// handler called in-process, or RIE.InvokeFunctionURL.
type URLInvokeFunc func(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error)

// FunctionURLFront is an http.Handler that plays a Lambda Function URL: it
// turns each request into the payload Lambda sends (payload format 2.0),
// invokes the function and writes its response. A failed invocation is a
// 502, as with Lambda.
func FunctionURLFront(invoke URLInvokeFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 6<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		headers := map[string]string{}
		for k, v := range r.Header {
			headers[strings.ToLower(k)] = strings.Join(v, ",")
		}
		req := events.LambdaFunctionURLRequest{
			Version:        "2.0",
			RawPath:        r.URL.Path,
			RawQueryString: r.URL.RawQuery,
			Headers:        headers,
			RequestContext: events.LambdaFunctionURLRequestContext{
				RequestID:  "front-" + time.Now().Format("150405.000000000"),
				DomainName: r.Host,
				HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
					Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: r.RemoteAddr, UserAgent: r.UserAgent(),
				},
			},
		}
		if utf8.Valid(body) {
			req.Body = string(body)
		} else {
			req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
		resp, err := invoke(r.Context(), req)
		if err != nil {
			http.Error(w, "function error: "+err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		status := resp.StatusCode
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		out := []byte(resp.Body)
		if resp.IsBase64Encoded {
			out, _ = base64.StdEncoding.DecodeString(resp.Body)
		}
		_, _ = w.Write(out)
	})
}
