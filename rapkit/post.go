package rapkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentslice/agentslice/internal/retry"
)

// RetryPolicy bounds the retries of a POST that failed with a 5xx status or a
// transport error. Other statuses are never retried. Waits grow from Base,
// doubling up to Max, with full jitter; the whole exchange, waits included,
// stops after Attempts tries or once Total has passed, whichever comes first.
type RetryPolicy struct {
	Attempts       int           // default 5
	Base           time.Duration // default 100ms
	Max            time.Duration // default 2s
	Total          time.Duration // default 15s
	AttemptTimeout time.Duration // one try; default 10s
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 5
	}
	if p.Base <= 0 {
		p.Base = 100 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 2 * time.Second
	}
	if p.Total <= 0 {
		p.Total = 15 * time.Second
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = 10 * time.Second
	}
	return p
}

// StatusError is a final non-2xx answer that is not retried (a 4xx, a 3xx).
type StatusError struct {
	Method string
	URL    string
	Status int
	Body   string // the start of the response body, sanitized
}

func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("%s %s: HTTP %d", e.Method, e.URL, e.Status)
	}
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.URL, e.Status, e.Body)
}

// ServerError is a 5xx answer: retried, and the Last error of an
// UnavailableError when every attempt got one.
type ServerError struct {
	Status int
	Body   string // the start of the response body, sanitized
}

func (e *ServerError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body) }

// UnavailableError reports that a POST kept failing with 5xx or transport
// errors until the retry budget ran out.
type UnavailableError struct {
	Method   string
	URL      string
	Attempts int
	Last     error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s %s: unavailable after %d attempts: %v", e.Method, e.URL, e.Attempts, e.Last)
}

func (e *UnavailableError) Unwrap() error { return e.Last }

// PostJSON POSTs v as JSON to url and retries per policy. It returns nil on
// any 2xx, a *StatusError for a final non-retryable status, an
// *UnavailableError when retries ran out, or the context's error.
func PostJSON(ctx context.Context, client *http.Client, url string, v any, policy RetryPolicy) error {
	body, err := EncodeJSON(v)
	if err != nil {
		return fmt.Errorf("encoding body for %s: %w", url, err)
	}
	return postBytes(ctx, client, url, body, policy)
}

// EncodeJSON encodes v without HTML escaping: a result of markup keeps one
// byte per <, > and & instead of six.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func postBytes(ctx context.Context, client *http.Client, url string, body []byte, policy RetryPolicy) error {
	_, err := Exchange(ctx, client, http.MethodPost, url, body, policy, 0)
	return err
}

// Exchange sends one request with retries per policy and returns up to
// maxBody bytes of a 2xx response's body (more is an error).
func Exchange(ctx context.Context, client *http.Client, method, url string, body []byte, policy RetryPolicy, maxBody int64) ([]byte, error) {
	p := policy.withDefaults()
	if client == nil {
		client = http.DefaultClient
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, p.Total)
	defer cancel()
	var last error
	attempt := 0
	for attempt < p.Attempts {
		if attempt > 0 {
			t := time.NewTimer(retry.Backoff{Base: p.Base, Max: p.Max}.Delay(attempt) + 1)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, giveUp(parent, method, url, attempt, last)
			case <-t.C:
			}
		}
		attempt++
		resp, retry, err := exchangeOnce(ctx, client, method, url, body, p.AttemptTimeout, maxBody)
		if err == nil || !retry {
			return resp, err
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, giveUp(parent, method, url, attempt, last)
}

// giveUp reports the caller's cancellation or deadline as such, and an
// exhausted budget (attempts or Total) as unavailability.
func giveUp(parent context.Context, method, url string, attempts int, last error) error {
	if err := parent.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if last == nil {
		last = errors.New("retry budget spent")
	}
	return &UnavailableError{Method: method, URL: url, Attempts: attempts, Last: last}
}

func exchangeOnce(ctx context.Context, client *http.Client, method, url string, body []byte, timeout time.Duration, maxBody int64) (out []byte, retry bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, false, fmt.Errorf("%s %s: %w", method, url, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if tp := traceparentOf(ctx); tp != "" {
		req.Header.Set(TraceparentHeader, tp)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, true, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if maxBody == 0 { // the body is not wanted
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			return nil, false, nil
		}
		out, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
		if err != nil {
			return nil, true, fmt.Errorf("%s %s: reading the response: %w", method, url, err)
		}
		if int64(len(out)) > maxBody {
			return nil, false, fmt.Errorf("%s %s: response is larger than %d bytes", method, url, maxBody)
		}
		return out, false, nil
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // let the connection be reused
	if resp.StatusCode >= 500 {
		return nil, true, &ServerError{Status: resp.StatusCode, Body: sanitize(snippet)}
	}
	return nil, false, &StatusError{Method: method, URL: url, Status: resp.StatusCode, Body: sanitize(snippet)}
}

// sanitize makes a response snippet safe to show a model or a log: valid
// UTF-8, one line, at most 300 bytes.
func sanitize(b []byte) string {
	s := strings.ToValidUTF8(string(b), "?")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	return s
}

// PostChoice POSTs the user's answer to a user_choice's response_url
// ({id, selected}), retrying 5xx and transport errors per policy.
func PostChoice(ctx context.Context, client *http.Client, responseURL, id string, selected int, policy RetryPolicy) error {
	if err := checkHTTPURL("response_url", responseURL); err != nil {
		return fmt.Errorf("rap: answering choice %s: %w", id, err)
	}
	if err := PostJSON(ctx, client, responseURL, ChoiceResponse{ID: id, Selected: selected}, policy); err != nil {
		return fmt.Errorf("rap: answering choice %s: %w", id, err)
	}
	return nil
}
