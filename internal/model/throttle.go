package model

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/openai/openai-go/v3"
)

// IsThrottled reports whether err (as a model of this package returns it)
// is the provider refusing work for lack of quota: Bedrock's
// ThrottlingException or ServiceQuotaExceededException, or HTTP 429 from
// either provider. Callers count these per model; the engine retries them.
func IsThrottled(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException":
			return true
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == 429 {
		return true
	}
	var oe *openai.Error
	return errors.As(err, &oe) && oe.StatusCode == 429
}

// retryAfterError is a retryable provider error that says how long the
// provider asked to wait (HTTP Retry-After); the engine's provider wait
// honours it (runtime.RetryAfterError).
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string             { return e.err.Error() }
func (e *retryAfterError) Unwrap() error             { return e.err }
func (e *retryAfterError) RetryAfter() time.Duration { return e.after }

// withRetryAfter wraps err with the wait h (a Retry-After header: seconds
// or an HTTP date) asks for; err as it is when h says nothing usable.
func withRetryAfter(err error, h http.Header, now time.Time) error {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return err
	}
	var d time.Duration
	if n, perr := strconv.Atoi(v); perr == nil {
		d = time.Duration(n) * time.Second
	} else if t, perr := http.ParseTime(v); perr == nil {
		d = t.Sub(now)
	}
	if d <= 0 {
		return err
	}
	return &retryAfterError{err: err, after: d}
}
