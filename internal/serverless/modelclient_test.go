package serverless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless"
)

// oldModelTimeout is the http.Client.Timeout the model client once had
// (issue 26): it covered reading the body, so every stream was cut there.
const oldModelTimeout = 30 * time.Second

// slowConverseStream answers ConverseStream with a real event stream
// (application/vnd.amazon.eventstream, framed by the SDK's encoder) that
// sends one text delta a second until lasting has passed, then ends the
// message. The pacing is the server's; the test waits on the completion.
// The returned log says what the server sent and how its side ended, for
// a failure's message.
func slowConverseStream(t *testing.T, lasting time.Duration) (*httptest.Server, *streamLog) {
	t.Helper()
	log := &streamLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/converse-stream") {
			http.Error(w, `{"message":"not ConverseStream"}`, http.StatusNotFound)
			return
		}
		// Read the whole request first, as Bedrock does before its first
		// token. (This once flaked, about 1 run in 12 on a loaded machine:
		// the SDK closed its request body under net/http's write loop;
		// model.detachedBody is the fix, TestDetachedBodyKeepsTheStream in
		// internal/model its deterministic test.)
		var in struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.Messages) == 0 {
			http.Error(w, fmt.Sprintf(`{"message":"unreadable ConverseStream request: %v"}`, err), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.WriteHeader(http.StatusOK)
		enc := eventstream.NewEncoder()
		send := func(event string, payload any) bool {
			var msg eventstream.Message
			msg.Headers.Set(":message-type", eventstream.StringValue("event"))
			msg.Headers.Set(":event-type", eventstream.StringValue(event))
			msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			msg.Payload, _ = json.Marshal(payload)
			var buf bytes.Buffer
			if err := enc.Encode(&buf, msg); err != nil {
				t.Errorf("encoding %s: %v", event, err)
				return false
			}
			if _, err := w.Write(buf.Bytes()); err != nil {
				log.end(fmt.Sprintf("writing %s: %v", event, err))
				return false // the client went away (the old timeout)
			}
			w.(http.Flusher).Flush()
			log.sent.Add(1)
			return true
		}
		if !send("messageStart", map[string]any{"role": "assistant"}) {
			return
		}
		end := time.Now().Add(lasting)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; time.Now().Before(end); i++ {
			if !send("contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": fmt.Sprintf("w%d ", i)}}) {
				return
			}
			select {
			case <-tick.C:
			case <-r.Context().Done():
				log.end(fmt.Sprintf("the request's context ended after event %d: %v", log.sent.Load(), context.Cause(r.Context())))
				return
			}
		}
		for _, f := range []struct {
			event   string
			payload any
		}{
			{"contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "done."}}},
			{"contentBlockStop", map[string]any{"contentBlockIndex": 0}},
			{"messageStop", map[string]any{"stopReason": "end_turn"}},
			{"metadata", map[string]any{"usage": map[string]any{"inputTokens": 5, "outputTokens": 40, "totalTokens": 45}, "metrics": map[string]any{"latencyMs": 1}}},
		} {
			if !send(f.event, f.payload) {
				return
			}
		}
		log.end("sent the whole stream")
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

// streamLog is what slowConverseStream's server did: the events it sent
// and how its side of the stream ended.
type streamLog struct {
	sent  atomic.Int64
	mu    sync.Mutex
	ended string
}

func (l *streamLog) end(how string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended == "" {
		l.ended = how
	}
}

func (l *streamLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ended := l.ended
	if ended == "" {
		ended = "still streaming"
	}
	return fmt.Sprintf("the server sent %d events; its side: %s", l.sent.Load(), ended)
}

type textWriter struct{ strings.Builder }

func (w *textWriter) Text(s string)                 { w.WriteString(s) }
func (w *textWriter) Reasoning(string)              {}
func (w *textWriter) ToolCall(id, name, arg string) {}
func (w *textWriter) Usage(runtime.Usage)           {}

// TestBedrockStreamOutlivesTheOldTimeout builds the slice function exactly
// as cmd/slicefn does (lambdafn.Options{} defaults; only the credentials
// and the Bedrock endpoint are local) and streams one completion through
// its model, the real bedrockruntime client, from a server that streams
// for longer than the old 30 s client timeout. The completion must end
// whole: a model request is bounded by the slice's context alone.
//
// LONG TEST: it takes about 32 s of wall time (run in parallel with the
// package's other tests); no clock can be faked under http.Client.Timeout.
func TestBedrockStreamOutlivesTheOldTimeout(t *testing.T) {
	t.Parallel()
	srv, log := slowConverseStream(t, oldModelTimeout+2*time.Second)
	cfg := serverless.SliceConfig{
		InputQueueURL:    "http://127.0.0.1:1/000000000000/in.fifo",
		DLQURL:           "http://127.0.0.1:1/000000000000/dlq.fifo",
		OutputQueueURL:   "http://127.0.0.1:1/000000000000/out",
		DelayQueueURL:    "http://127.0.0.1:1/000000000000/delay",
		DedupTable:       "dedup",
		PGDSN:            "postgres://nobody@127.0.0.1:1/none?sslmode=disable", // never connected: no slice runs
		SchedulerRoleARN: "arn:aws:iam::000000000000:role/scheduler",
		CallbackURL:      "http://127.0.0.1:1/callback",
		Keys:             lambdafn.KeySource{Inline: "k1:" + strings.Repeat("A", 43) + "="},
		Margin:           serverless.DefaultMargin,
		Model: model.Config{Name: "claude", Provider: model.ProviderBedrock, ModelID: "anthropic.claude-test-v1:0",
			ContextWindow: 200000, MaxOutputTokens: 8192, Bedrock: &model.BedrockConfig{Endpoint: srv.URL}},
	}
	awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")}
	fn, err := serverless.BuildSliceFunction(context.Background(), cfg, lambdafn.Options{AWS: &awsCfg, Stdout: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fn.Close)

	// The slice's context: far beyond the stream, as a real slice's
	// deadline is (the slice function's timeout is at least 120 s).
	ctx, cancel := context.WithTimeout(context.Background(), 3*oldModelTimeout)
	defer cancel()
	var w textWriter
	req := &runtime.CompletionRequest{ThreadID: "th_slow", History: []runtime.Item{{Kind: runtime.ItemUser, Text: "write at length"}}}
	start := time.Now()
	if err := fn.Engine.Model.Complete(ctx, req, &w); err != nil {
		// Which side ended the stream, and whether the test's own bound
		// did (a starved machine), tells the failures apart.
		t.Fatalf("a completion streaming for %v failed after %v (the context: %v): %v (text so far %q); %s",
			oldModelTimeout+2*time.Second, time.Since(start).Round(time.Millisecond), ctx.Err(), err, w.String(), log)
	}
	if got := w.String(); !strings.HasPrefix(got, "w0 ") || !strings.HasSuffix(got, "done.") || strings.Count(got, "w") < int(oldModelTimeout/time.Second) {
		t.Fatalf("streamed text %q: want every delta up to \"done.\"", got)
	}
}
