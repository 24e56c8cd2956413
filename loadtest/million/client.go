package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// api is the harness's client of one serve process: POSTs, and one
// event stream of replies (GET /events?kinds=reply) routed to whoever
// waits for a thread's reply. Each thread has at most one message of the
// harness in flight, so a reply answers the one waiter of its thread.
type api struct {
	url     string
	http    *http.Client
	mu      sync.Mutex
	waiters map[string]chan time.Time
	replies atomic.Int64
	dropped atomic.Bool
	cancel  context.CancelFunc
	done    chan struct{}
	stages  *stageRecorder // the wake-ups' traces, if on (stages.go)
}

func newAPI(url string) *api {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 1024
	return &api{url: url, http: &http.Client{Transport: tr, Timeout: 2 * time.Minute}, waiters: map[string]chan time.Time{}}
}

// stream subscribes to the replies; it returns once the subscription is live.
func (a *api) stream(ctx context.Context) error {
	ctx, a.cancel = context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"/events?kinds=reply", nil)
	resp, err := (&http.Client{Transport: a.http.Transport}).Do(req)
	if err != nil {
		return fmt.Errorf("GET /events: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fmt.Errorf("GET /events: %s", resp.Status)
	}
	r := bufio.NewReaderSize(resp.Body, 1<<16)
	if _, err := r.ReadString('\n'); err != nil { // ": subscribed to …": live from here
		resp.Body.Close()
		return fmt.Errorf("GET /events: %w", err)
	}
	a.done = make(chan struct{})
	go func() { // ends when the stream does (stop cancels it)
		defer close(a.done)
		defer resp.Body.Close()
		event := ""
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				if event == "dropped" {
					a.dropped.Store(true)
					continue
				}
				var ev struct {
					Thread string `json:"thread_id"`
					Kind   string `json:"kind"`
				}
				if json.Unmarshal([]byte(line[len("data: "):]), &ev) == nil && ev.Kind == "reply" {
					now := time.Now()
					a.replies.Add(1)
					a.mu.Lock()
					ch := a.waiters[ev.Thread]
					delete(a.waiters, ev.Thread)
					a.mu.Unlock()
					if ch != nil {
						ch <- now
					}
				}
			}
		}
	}()
	return nil
}

func (a *api) stop() {
	if a.cancel != nil {
		a.cancel()
		<-a.done
	}
}

// wait registers for thread's next reply; call before posting.
func (a *api) wait(thread string) chan time.Time {
	ch := make(chan time.Time, 1)
	a.mu.Lock()
	a.waiters[thread] = ch
	a.mu.Unlock()
	return ch
}

func (a *api) unwait(thread string) {
	a.mu.Lock()
	delete(a.waiters, thread)
	a.mu.Unlock()
}

// post sends a user message with the given ID; it returns when serve
// accepted it (202: durable in the inbox on the sqlite store).
func (a *api) post(ctx context.Context, thread, id, text string) error {
	body, _ := json.Marshal(map[string]string{"text": text, "id": id})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.url+"/threads/"+thread+"/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if tp, _ := ctx.Value(tpKey{}).(string); tp != "" {
		req.Header.Set("traceparent", tp)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST /threads/%s/messages: %s: %s", thread, resp.Status, b)
	}
	return nil
}

// item is what the harness reads of a history item.
type item struct {
	Kind  string `json:"kind"`
	Input string `json:"input"`
	Took  uint32 `json:"took"`
}

// history reads a thread's items from position from on.
func (a *api) history(ctx context.Context, thread string, from int) ([]item, int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/threads/%s?from=%d", a.url, thread, from), nil)
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, 0, fmt.Errorf("GET /threads/%s: %s: %s", thread, resp.Status, b)
	}
	var th struct {
		Total int    `json:"total"`
		Items []item `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&th); err != nil {
		return nil, 0, err
	}
	return th.Items, th.Total, nil
}

// answered reports whether a thread's history holds the user message id
// followed by an assistant turn.
func answered(items []item, id string) bool {
	for i, it := range items {
		if it.Input == id {
			for _, later := range items[i+1:] {
				if later.Kind == "assistant" {
					return true
				}
			}
		}
	}
	return false
}

// page times one GET /threads page.
func (a *api) page(ctx context.Context, cursor string) (time.Duration, string, int, error) {
	u := "limit=50"
	if cursor != "" {
		u += "&cursor=" + url.QueryEscape(cursor)
	}
	return a.pageOf(ctx, u)
}

// pageOf times one GET /threads?query.
func (a *api) pageOf(ctx context.Context, query string) (time.Duration, string, int, error) {
	u := a.url + "/threads?" + query
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	t0 := time.Now()
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, "", 0, err
	}
	defer resp.Body.Close()
	var pg struct {
		Threads []json.RawMessage `json:"threads"`
		Next    string            `json:"next_cursor"`
		Total   int               `json:"total"`
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return 0, "", 0, fmt.Errorf("GET /threads: %s: %s", resp.Status, b)
	}
	err = json.NewDecoder(resp.Body).Decode(&pg)
	return time.Since(t0), pg.Next, pg.Total, err
}
