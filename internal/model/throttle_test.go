package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"

	"github.com/aws/smithy-go"
	"github.com/openai/openai-go/v3"
)

func TestIsThrottled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("bedrock model m: streaming: %w", &smithy.GenericAPIError{Code: "ThrottlingException"}), true},
		{&smithy.GenericAPIError{Code: "ServiceQuotaExceededException"}, true},
		{fmt.Errorf("openai model m: %w", &openai.Error{StatusCode: 429}), true},
		{&smithy.GenericAPIError{Code: "ValidationException"}, false},
		{&openai.Error{StatusCode: 500}, false},
		{errors.New("connection reset"), false},
	} {
		if got := IsThrottled(c.err); got != c.want {
			t.Errorf("IsThrottled(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A 429 or 503 with Retry-After is retryable and says how long to wait
// (seconds or an HTTP date); without the header it says nothing.
func TestOpenAIRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, header string
		status       int
		want         time.Duration
	}{
		{"429 seconds", "7", 429, 7 * time.Second},
		{"503 date", time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat), 503, 90 * time.Second},
		{"no header", "", 503, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, `{"error":{"message":"slow down"}}`)
			}))
			t.Cleanup(ts.Close)
			m, err := FromConfig(context.Background(), Config{Name: "gpt", Provider: ProviderOpenAI, ModelID: "gpt-test",
				ContextWindow: 128000, MaxOutputTokens: 4096, OpenAI: &OpenAIConfig{BaseURL: ts.URL + "/v1"}})
			if err != nil {
				t.Fatal(err)
			}
			req := &runtime.CompletionRequest{ThreadID: "t", History: []runtime.Item{{Kind: runtime.ItemUser, Text: "hi"}}}
			err = m.Complete(context.Background(), req, &nopWriter{})
			if err == nil || runtime.IsPermanent(err) {
				t.Fatalf("error %v: want a retryable one", err)
			}
			var ra runtime.RetryAfterError
			got := time.Duration(0)
			if errors.As(err, &ra) {
				got = ra.RetryAfter()
			}
			if d := got - tc.want; d < -2*time.Second || d > 0 {
				t.Fatalf("Retry-After %v, want %v (error %v)", got, tc.want, err)
			}
		})
	}
}

type nopWriter struct{}

func (nopWriter) Text(string)             {}
func (nopWriter) Reasoning(string)        {}
func (nopWriter) ToolCall(_, _, _ string) {}
func (nopWriter) Usage(runtime.Usage)     {}

// Bedrock's Retry-After reaches the engine too.
func TestBedrockRetryAfter(t *testing.T) {
	t.Parallel()
	m, _ := newTestBedrock(t, nil, "throttling_retry_after.json")
	err := m.Complete(context.Background(), simpleRequest(), &recorder{})
	var ra runtime.RetryAfterError
	if err == nil || runtime.IsPermanent(err) || !errors.As(err, &ra) || ra.RetryAfter() != 12*time.Second || !IsThrottled(err) {
		t.Fatalf("error %v: want a retryable throttling error asking for 12s", err)
	}
}
