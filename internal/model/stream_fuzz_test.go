package model

// Fuzz targets for the two model stream decoders: whatever a model endpoint
// streams back, Complete returns a result or an error, without panicking
// and within a deadline (the engine discards a failed completion's output,
// so an error is always a safe answer to garbage). The responses are served by an in-memory http.RoundTripper, so the
// real SDK clients decode them. Seeds are the recordings in
// testdata/openai/*.sse and testdata/bedrock/*.json.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// cannedTransport answers every request with one response.
type cannedTransport struct {
	status      int
	contentType string
	body        []byte
}

func (c cannedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: c.status, Status: http.StatusText(c.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{c.contentType}}, Body: io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: int64(len(c.body)), Request: r}, nil
}

func seedFiles(f *testing.F, dir, suffix string, add func(b []byte)) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), suffix) || strings.Contains(e.Name(), "golden") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
}

// FuzzOpenAIStream feeds arbitrary server-sent-event bodies to the
// OpenAI-compatible provider.
func FuzzOpenAIStream(f *testing.F) {
	seedFiles(f, filepath.Join("testdata", "openai"), ".sse", func(b []byte) { f.Add(b) })
	f.Add([]byte("data: [DONE]\n\n"))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"id\":\"x\",\"function\":{\"name\":\"n\",\"arguments\":\"{\"}}]}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		hc := &http.Client{Transport: cannedTransport{status: 200, contentType: "text/event-stream", body: body}}
		m, err := FromConfig(context.Background(), Config{Name: "gpt", Provider: ProviderOpenAI, ModelID: testOpenAIModel,
			ContextWindow: 128000, MaxOutputTokens: 4096, OpenAI: &OpenAIConfig{BaseURL: "http://fuzz.invalid/v1", APIKey: "sk-test"}},
			WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec := &recorder{}
		_ = m.Complete(ctx, simpleRequest(), rec) // any error is fine: the target looks for panics and hangs
		if ctx.Err() != nil {
			t.Fatalf("the stream decoder did not finish within 10s on %q", body)
		}
	})
}

// FuzzBedrockStream feeds arbitrary ConverseStream events to the Bedrock
// provider. The fuzzed input is a list of frames (event or exception name
// and JSON payload) that the test frames in the AWS event-stream encoding,
// so mutations reach the event decoding rather than dying at the CRC; cut
// truncates the encoded stream, as a dropped connection does.
func FuzzBedrockStream(f *testing.F) {
	seedFiles(f, filepath.Join("testdata", "bedrock"), ".json", func(b []byte) {
		var rec bedrockRecording
		if json.Unmarshal(b, &rec) != nil || len(rec.Frames) == 0 {
			return
		}
		frames, _ := json.Marshal(rec.Frames)
		f.Add(frames, uint16(0))
		f.Add(frames, uint16(40))
	})
	f.Fuzz(func(t *testing.T, framesJSON []byte, cut uint16) {
		var frames []struct {
			Event     string          `json:"event"`
			Exception string          `json:"exception"`
			Payload   json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(framesJSON, &frames) != nil {
			return
		}
		var body bytes.Buffer
		enc := eventstream.NewEncoder()
		for _, fr := range frames {
			var msg eventstream.Message
			if fr.Exception != "" {
				msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
				msg.Headers.Set(":exception-type", eventstream.StringValue(fr.Exception))
			} else {
				msg.Headers.Set(":message-type", eventstream.StringValue("event"))
				msg.Headers.Set(":event-type", eventstream.StringValue(fr.Event))
			}
			msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			msg.Payload = fr.Payload
			if err := enc.Encode(&body, msg); err != nil {
				return // not encodable (e.g. a header too long): no server sends it
			}
		}
		b := body.Bytes()
		if cut > 0 && int(cut) < len(b) {
			b = b[:len(b)-int(cut)]
		}
		awsCfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")}
		hc := &http.Client{Transport: cannedTransport{status: 200, contentType: "application/vnd.amazon.eventstream", body: b}}
		m, err := FromConfig(context.Background(), Config{Name: "claude", Provider: ProviderBedrock, ModelID: testBedrockModel,
			ContextWindow: 200000, MaxOutputTokens: 8192, Bedrock: &BedrockConfig{Endpoint: "http://fuzz.invalid"}},
			WithAWSConfig(awsCfg), WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec := &recorder{}
		_ = m.Complete(ctx, simpleRequest(), rec) // any error is fine: the target looks for panics and hangs
		if ctx.Err() != nil {
			t.Fatalf("the stream decoder did not finish within 10s on %s", framesJSON)
		}
	})
}
