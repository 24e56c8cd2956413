package serverless_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.uber.org/goleak"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/runtime"
)

// notifyingRunner is a slice that, like a slice closing a thread or
// cancelling a call, starts a background notification and returns.
type notifyingRunner struct {
	fakeRunner
	d   *rap.Dispatcher
	url string
}

func (n *notifyingRunner) RunSlice(ctx context.Context, in runtime.SliceInput) (*runtime.SliceResult, error) {
	n.d.Notify(n.url+"/close_thread", rap.CloseThread{ThreadID: in.ThreadID})
	return n.fakeRunner.RunSlice(ctx, in)
}

func noticeRig(t *testing.T) (arrived chan string, release chan struct{}, d *rap.Dispatcher, url string) {
	t.Helper()
	arrived, release = make(chan string, 8), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		<-release
	}))
	t.Cleanup(srv.Close)
	keys, err := rap.ParseKeyring("k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", 32))))
	if err != nil {
		t.Fatal(err)
	}
	// No keep-alive: once a notification is done, no connection goroutine
	// of it is left either.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	d, err = rap.NewDispatcher(rap.DispatcherConfig{Signer: &rap.Signer{Keys: keys, BaseURL: "https://cb.example/rap/callback"},
		Client: client, NotifyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return arrived, release, d, srv.URL
}

// Handle does not return while a notification a slice started is still
// running (Lambda would freeze it), and no goroutine a slice started
// outlives Handle.
func TestHandleWaitsForNotifications(t *testing.T) {
	arrived, release, d, url := noticeRig(t)
	before := goleak.IgnoreCurrent()
	var out bytes.Buffer
	h := newHandler(&fakeRunner{}, &fakeDLQ{}, &out)
	h.Slices = &notifyingRunner{d: d, url: url}
	h.Notices, h.NoticeWait = d, time.Hour
	done := make(chan events.SQSEventResponse, 1)
	go func() {
		resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{userRec("s1", "t1", "m1")}})
		done <- resp
	}()
	if got := waitCh(t, arrived); got != "/close_thread" {
		t.Fatalf("notification to %q", got)
	}
	select {
	case <-done:
		t.Fatal("Handle returned while the close_thread notification was still in flight")
	default:
	}
	close(release)
	if resp := waitCh(t, done); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("goroutines started by the slice outlived Handle: %v", err)
	}
}

// The wait is bounded: a tool server that never answers delays the reply
// to Lambda by NoticeWait at most, with a warning.
func TestHandleNoticeWaitIsBounded(t *testing.T) {
	arrived, release, d, url := noticeRig(t)
	defer close(release)
	var out bytes.Buffer
	h := newHandler(&fakeRunner{}, &fakeDLQ{}, &out)
	h.Slices = &notifyingRunner{d: d, url: url}
	h.Notices, h.NoticeWait = d, time.Millisecond
	resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{userRec("s1", "t1", "m1")}})
	waitCh(t, arrived)
	if len(resp.BatchItemFailures) != 0 || !strings.Contains(out.String(), "notifications still in flight") {
		t.Fatalf("failures %+v, log:\n%s", resp.BatchItemFailures, out.String())
	}
}

func waitCh[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting")
		panic("unreachable")
	}
}

// deadlineWaiter records the deadline of the context it is given and
// returns at once.
type deadlineWaiter struct {
	got chan time.Time
}

func (w *deadlineWaiter) Wait(ctx context.Context) error {
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Time{}
	}
	w.got <- dl
	return nil
}

// The notice wait never reaches into the margin kept before the
// invocation's deadline: with 4 s left and a 3 s margin, a 5 s NoticeWait
// is cut at the slices' deadline.
func TestHandleNoticeWaitEndsAtTheSliceDeadline(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	h := newHandler(&fakeRunner{}, &fakeDLQ{}, &out)
	w := &deadlineWaiter{got: make(chan time.Time, 1)}
	h.Notices, h.NoticeWait, h.Margin = w, 5*time.Second, 3*time.Second
	invocation := time.Now().Add(4 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), invocation)
	defer cancel()
	if _, err := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{userRec("s1", "t1", "m1")}}); err != nil {
		t.Fatal(err)
	}
	got := waitCh(t, w.got)
	if got.IsZero() || got.After(invocation.Add(-h.Margin)) {
		t.Fatalf("the notice wait may last until %v; the slices' deadline is %v (invocation deadline %v, margin %v)",
			got, invocation.Add(-h.Margin), invocation, h.Margin)
	}
}
