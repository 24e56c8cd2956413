package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestThreadsPassesFiltersAndIgnoresUnknownFields: the set list options
// reach the server as query parameters, the token as a bearer header, and
// fields this client does not know are ignored. (A stand-in server: it
// checks the exact request; the real server's answer is covered by Example.)
func TestThreadsPassesFiltersAndIgnoresUnknownFields(t *testing.T) {
	var gotQuery, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotQuery, gotAuth = r.URL.RawQuery, r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"threads":[{"id":"a","status":"failed","title":"Fix it","agent":"coder","last_activity":"2026-03-28T12:00:00.000Z",
			"brand_new":{"x":1},"length":3,"children":[{"id":"a/c","status":"idle","length":1}]}],"count":2,"next_cursor":"c2","also_new":true}`)
	}))
	defer srv.Close()
	c, err := New(srv.URL, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Threads(context.Background(), ListOptions{Limit: 5, Cursor: "c1", Status: "running", Agent: "coder", Query: "fix bug"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "agent=coder&cursor=c1&limit=5&q=fix+bug&status=running"; gotQuery != want {
		t.Errorf("query = %q, want %q", gotQuery, want)
	}
	if gotAuth != "Bearer s3cret" {
		t.Errorf("Authorization = %q", gotAuth)
	}
	th := l.Threads[0]
	if l.NextCursor != "c2" || th.Title != "Fix it" || th.Agent != "coder" || th.Status != "failed" || th.LastActivity == nil ||
		th.LastActivity.Minute() != 0 || len(th.Children) != 1 || th.Children[0].ID != "a/c" {
		t.Fatalf("list = %+v", l)
	}
	if _, err := c.Threads(context.Background(), ListOptions{}); err != nil || gotQuery != "" {
		t.Fatalf("unset options sent %q (err %v)", gotQuery, err)
	}
}

// TestAPIErrorCarriesStatusMessageAndField: a 409 comes back as an
// *APIError with the server's message and field.
func TestAPIErrorCarriesStatusMessageAndField(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"error":"thread t is closed and takes no more messages","field":"thread_id"}`)
	}))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	_, err := c.Send(context.Background(), "t", Message{Text: "hi"})
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 409 || ae.Field != "thread_id" || ae.Message != "thread t is closed and takes no more messages" {
		t.Fatalf("err = %#v", err)
	}
	if IsNotFound(err) {
		t.Fatal("a 409 is not a 404")
	}
}

// TestStreamParsesEvents: comments and keep-alives are skipped, the SSE
// event name fills a missing kind, LastSeq follows history events, and a
// "dropped" event ends the stream with ErrDropped.
func TestStreamParsesEvents(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery != "after=0&kinds=turn%2Cstate" {
			http.Error(w, "query "+r.URL.RawQuery, 400)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": subscribed\n\nid: 4\nevent: turn\ndata: {\"id\":\"t#3\",\"kind\":\"turn\",\"seq\":4,\"text\":\"hi\"}\n\n: keep-alive\n\n"+
			"event: state\ndata: {\"id\":\"t@v2\",\"state\":{\"status\":\"idle\",\"version\":2},\"unknown\":[1]}\n\nevent: dropped\ndata: {\"error\":\"fell behind\"}\n\n")
	}))
	defer srv.Close()
	c, _ := New(srv.URL, "")
	s, err := c.Events(context.Background(), "t", EventOptions{Resume: true, Kinds: []string{"turn", "state"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev, err := s.Next()
	if err != nil || ev.Kind != "turn" || ev.Text != "hi" || s.LastSeq != 4 {
		t.Fatalf("first = %+v, %v (last seq %d)", ev, err, s.LastSeq)
	}
	ev, err = s.Next()
	if err != nil || ev.Kind != "state" || ev.State == nil || ev.State.Status != "idle" || s.LastSeq != 4 {
		t.Fatalf("second = %+v, %v", ev, err)
	}
	if _, err := s.Next(); !errors.Is(err, ErrDropped) {
		t.Fatalf("third: %v, want ErrDropped", err)
	}
}

// TestChooseAndControlRequests: the exact requests Choose, Stop and Close
// send (the real server's user_choice needs a RAP tool; its endpoint is
// tested in internal/server).
func TestChooseAndControlRequests(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.EscapedPath()+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	c, _ := New(srv.URL+"/", "")
	ctx := context.Background()
	if err := c.Choose(ctx, "a/b", "call_1", 2); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx, "t", ""); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx, "t", "done"); err != nil {
		t.Fatal(err)
	}
	want := []string{`POST /threads/a%2Fb/choices/call_1 {"selected":2}`, `POST /threads/t/stop {}`, `POST /threads/t/close {"reason":"done"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://x", "http://"} {
		if _, err := New(u, ""); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
}
