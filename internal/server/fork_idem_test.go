package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// postFork POSTs a fork with an optional Idempotency-Key and returns the
// status and the body's thread (or the error's field).
func postFork(t *testing.T, srv *Server, source, key, body string) (int, forkResponse, apiError) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL()+"/threads/"+source+"/fork", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, forkResponse{}, apiError{}
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, forkResponse{}, apiError{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	checkAnswer(t, req, resp, b)
	var f forkResponse
	var e apiError
	if resp.StatusCode < 300 {
		_ = json.Unmarshal(b, &f)
	} else {
		_ = json.Unmarshal(b, &e)
	}
	return resp.StatusCode, f, e
}

// A fork named by its caller ("thread" in the body, or an Idempotency-Key
// header) is made once however often the request is sent, at once or
// later: the retries answer 200 with the same thread and first message,
// and the model runs once for the fork's first message. An ID another
// thread holds is a 409; a bad one a 400.
func TestForkIsIdempotent(t *testing.T) {
	t.Parallel()
	srv, m := forkServer(t, t.TempDir())
	postMessage(t, srv, "thr_src", `{"text":"What time is it?"}`)
	waitUntil(t, "the first turn's reply", func() bool {
		var th threadResponse
		return do(t, http.MethodGet, srv.URL()+"/threads/thr_src", "", &th) == http.StatusOK && len(th.Items) >= 5
	})
	waitIdle(t, srv)
	at := len(getThread(t, srv, "thr_src").Items)
	body := `{"at": ` + itoa(at) + `, "thread": "fork_mine", "text": "And next week?"}`

	// Sent four times at once (a client retrying after a timeout while the
	// first is still being served), then once more later.
	var wg sync.WaitGroup
	codes := make([]int, 4)
	forks := make([]forkResponse, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], forks[i], _ = postFork(t, srv, "thr_src", "", body)
		}()
	}
	wg.Wait()
	created := 0
	for i, c := range codes {
		if c == http.StatusCreated {
			created++
		} else if c != http.StatusOK {
			t.Fatalf("request %d: %d", i, c)
		}
		if forks[i] != forks[0] || forks[i].Thread != "fork_mine" || forks[i].Message == "" {
			t.Fatalf("request %d answered %+v, request 0 %+v", i, forks[i], forks[0])
		}
	}
	if created != 1 {
		t.Fatalf("%d of the requests created the fork (codes %v), want 1", created, codes)
	}
	waitIdle(t, srv)
	if c, f, _ := postFork(t, srv, "thr_src", "", body); c != http.StatusOK || f != forks[0] {
		t.Fatalf("a later retry: %d %+v, want 200 %+v", c, f, forks[0])
	}
	waitIdle(t, srv)
	th := getThread(t, srv, "fork_mine")
	if calls, _ := m.count("fork_mine"); calls != 1 || kinds(th.Items[at:]) != "user assistant" {
		t.Fatalf("the fork ran %d completions, its own history %s: want 1 and one user message", calls, kinds(th.Items[at:]))
	}

	// The Idempotency-Key header: the same key, the same fork; another key,
	// another fork.
	idle := `{"at": ` + itoa(at) + `}`
	c1, k1, _ := postFork(t, srv, "thr_src", "retry-me", idle)
	c2, k2, _ := postFork(t, srv, "thr_src", "retry-me", idle)
	c3, k3, _ := postFork(t, srv, "thr_src", "another", idle)
	if c1 != http.StatusCreated || c2 != http.StatusOK || k1 != k2 || c3 != http.StatusCreated || k3.Thread == k1.Thread {
		t.Fatalf("keyed forks: %d %+v, %d %+v, %d %+v", c1, k1, c2, k2, c3, k3)
	}

	// An ID that is not this fork's: another position, the source itself,
	// a thread that is no fork; bad IDs and keys.
	for _, tc := range []struct {
		key, body string
		code      int
		field     string
	}{
		{"", `{"at": 0, "thread": "fork_mine"}`, http.StatusConflict, "thread"},
		{"", `{"at": 0, "thread": "thr_src"}`, http.StatusConflict, "thread"},
		{"", `{"at": 0, "thread": "has space"}`, http.StatusBadRequest, "thread"},
		{"retry-me", `{"at": 0}`, http.StatusConflict, "thread"},
		{"retry-me", `{"at": ` + itoa(at) + `, "thread": "fork_other"}`, http.StatusBadRequest, "thread"},
		{strings.Repeat("k", 256), idle, http.StatusBadRequest, "Idempotency-Key"},
	} {
		if c, _, e := postFork(t, srv, "thr_src", tc.key, tc.body); c != tc.code || e.Field != tc.field {
			t.Errorf("key %q body %s: %d %+v, want %d naming %s", tc.key, tc.body, c, e, tc.code, tc.field)
		}
	}
	postMessage(t, srv, "thr_plain", `{"text":"hi"}`)
	waitIdle(t, srv)
	if c, _, e := postFork(t, srv, "thr_src", "", `{"at": 0, "thread": "thr_plain"}`); c != http.StatusConflict || e.Field != "thread" {
		t.Errorf("forking onto a thread that is no fork: %d %+v", c, e)
	}
	if calls, _ := m.count("fork_mine"); calls != 1 {
		t.Fatalf("refused requests ran the fork: %d completions", calls)
	}
}
