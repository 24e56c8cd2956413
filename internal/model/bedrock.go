package model

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/agentslice/agentslice/internal/runtime"
)

// bedrockModel streams completions with Bedrock's ConverseStream.
type bedrockModel struct {
	cfg        Config
	client     *bedrockruntime.Client
	withStatus bool
	cache      bool // prompt caching: cache points after system and tools
}

func newBedrock(ctx context.Context, cfg Config, o *options) (*bedrockModel, error) {
	bc := BedrockConfig{}
	if cfg.Bedrock != nil {
		bc = *cfg.Bedrock
	}
	var awsCfg aws.Config
	if o.awsConfig != nil {
		awsCfg = o.awsConfig.Copy()
	} else {
		var lo []func(*config.LoadOptions) error
		if bc.Region != "" {
			lo = append(lo, config.WithRegion(bc.Region))
		}
		var err error
		awsCfg, err = config.LoadDefaultConfig(ctx, lo...)
		if err != nil {
			return nil, fmt.Errorf("model %q: loading the AWS configuration: %w", cfg.label(), err)
		}
	}
	if bc.Region != "" {
		awsCfg.Region = bc.Region
	}
	if awsCfg.Region == "" {
		return nil, &ConfigError{Model: cfg.label(), Field: "bedrock.region",
			Reason: "no AWS region: set bedrock.region or AWS_REGION"}
	}
	client := bedrockruntime.NewFromConfig(awsCfg, func(opt *bedrockruntime.Options) {
		// Zero SDK retries: the engine retries a failed completion with
		// jittered backoff inside the slice deadline, and a retried stream
		// must start from an empty turn buffer anyway.
		opt.Retryer = aws.NopRetryer{}
		opt.RetryMaxAttempts = 0
		if bc.Endpoint != "" {
			opt.BaseEndpoint = aws.String(bc.Endpoint)
		}
		var inner aws.HTTPClient = awshttp.NewBuildableClient()
		if o.httpClient != nil {
			inner = o.httpClient
		} else if awsCfg.HTTPClient != nil {
			inner = awsCfg.HTTPClient
		}
		opt.HTTPClient = detachedBody{inner: inner}
	})
	return &bedrockModel{cfg: cfg, client: client, withStatus: bc.ToolResultStatus, cache: bc.PromptCache}, nil
}

// Info describes the model.
func (m *bedrockModel) Info() Info { return infoOf(&m.cfg) }

// Complete streams one completion into w.
func (m *bedrockModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	in, err := m.input(req)
	if err != nil {
		return runtime.Permanent(fmt.Errorf("bedrock model %s: building the request: %w", m.cfg.ModelID, err))
	}
	out, err := m.client.ConverseStream(ctx, in)
	if err != nil {
		return m.classify("starting the stream", err)
	}
	stream := out.GetStream()
	defer stream.Close()

	var (
		drafts    = map[int32]*toolDraft{}
		reasoning = map[int32]*runtime.ReasoningBlock{} // blocks being streamed, by index
		stopped   bool
	)
	blocks, _ := w.(runtime.ReasoningBlockWriter)
	// endReasoning records a finished reasoning block with its signature
	// (or redacted data), to be sent back unchanged on the next request.
	endReasoning := func(idx int32) {
		if b := reasoning[idx]; b != nil {
			delete(reasoning, idx)
			if blocks != nil {
				blocks.ReasoningBlock(*b)
			}
		}
	}
	reasoningAt := func(idx int32) *runtime.ReasoningBlock {
		b := reasoning[idx]
		if b == nil {
			b = &runtime.ReasoningBlock{}
			reasoning[idx] = b
		}
		return b
	}
	// flush emits the tool calls whose blocks ended, in block order.
	flush := func(idx int32) {
		if d := drafts[idx]; d != nil {
			delete(drafts, idx)
			w.ToolCall(d.id, d.name, d.args.String())
		}
	}
	events := stream.Events()
loop:
	for {
		var ev types.ConverseStreamOutput
		var ok bool
		select {
		case ev, ok = <-events:
		case <-ctx.Done():
			return fmt.Errorf("bedrock model %s: stream interrupted: %w", m.cfg.ModelID, ctx.Err())
		}
		if !ok {
			break loop
		}
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockStart:
			if tu, ok := v.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
				drafts[aws.ToInt32(v.Value.ContentBlockIndex)] = &toolDraft{
					id: aws.ToString(tu.Value.ToolUseId), name: aws.ToString(tu.Value.Name)}
			}
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			idx := aws.ToInt32(v.Value.ContentBlockIndex)
			switch d := v.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				w.Text(d.Value)
			case *types.ContentBlockDeltaMemberReasoningContent:
				switch r := d.Value.(type) {
				case *types.ReasoningContentBlockDeltaMemberText:
					w.Reasoning(r.Value)
					reasoningAt(idx).Text += r.Value
				case *types.ReasoningContentBlockDeltaMemberSignature:
					reasoningAt(idx).Signature += r.Value
				case *types.ReasoningContentBlockDeltaMemberRedactedContent:
					b := reasoningAt(idx)
					raw, _ := base64.StdEncoding.DecodeString(b.Redacted)
					b.Redacted = base64.StdEncoding.EncodeToString(append(raw, r.Value...))
				}
			case *types.ContentBlockDeltaMemberToolUse:
				dr := drafts[idx]
				if dr == nil {
					return fmt.Errorf("bedrock model %s: tool input delta for block %d, which did not start as a tool call", m.cfg.ModelID, idx)
				}
				dr.args.WriteString(aws.ToString(d.Value.Input))
			}
		case *types.ConverseStreamOutputMemberContentBlockStop:
			flush(aws.ToInt32(v.Value.ContentBlockIndex))
			endReasoning(aws.ToInt32(v.Value.ContentBlockIndex))
		case *types.ConverseStreamOutputMemberMessageStop:
			stopped = true
			// Blocks that never got their stop event still count, in order.
			idxs := make([]int32, 0, len(drafts))
			for i := range drafts {
				idxs = append(idxs, i)
			}
			sort.Slice(idxs, func(a, b int) bool { return idxs[a] < idxs[b] })
			for _, i := range idxs {
				flush(i)
			}
			ridx := make([]int32, 0, len(reasoning))
			for i := range reasoning {
				ridx = append(ridx, i)
			}
			sort.Slice(ridx, func(a, b int) bool { return ridx[a] < ridx[b] })
			for _, i := range ridx {
				endReasoning(i)
			}
		case *types.ConverseStreamOutputMemberMetadata:
			if u := v.Value.Usage; u != nil {
				w.Usage(runtime.Usage{
					Input:      int(aws.ToInt32(u.InputTokens)),
					Output:     int(aws.ToInt32(u.OutputTokens)),
					Cached:     int(aws.ToInt32(u.CacheReadInputTokens)),
					CacheWrite: int(aws.ToInt32(u.CacheWriteInputTokens)),
					Total:      int(aws.ToInt32(u.TotalTokens)),
				})
			}
		}
	}
	if err := stream.Err(); err != nil {
		return m.classify("reading the stream", err)
	}
	// The SDK's event-stream reader reports a connection dropped mid-frame
	// (io.ErrUnexpectedEOF) as a clean end, so a missing messageStop is the
	// only sign of a cut stream.
	if !stopped {
		return fmt.Errorf("bedrock model %s: the stream ended before messageStop (cut mid-turn)", m.cfg.ModelID)
	}
	return nil
}

type toolDraft struct {
	id, name string
	args     strings.Builder
}

func (m *bedrockModel) input(req *runtime.CompletionRequest) (*bedrockruntime.ConverseStreamInput, error) {
	turns := normalize(req.History)
	tc, err := bedrockToolConfig(req.Tools, turns, m.cache)
	if err != nil {
		return nil, err
	}
	in := &bedrockruntime.ConverseStreamInput{
		ModelId:         aws.String(m.cfg.ModelID),
		Messages:        bedrockMessages(turns, m.cfg.Images, m.withStatus),
		ToolConfig:      tc,
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(int32(min(m.cfg.MaxOutputTokens, 1<<31-1)))},
	}
	if req.System != "" {
		in.System = []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: req.System}}
		if m.cache {
			in.System = append(in.System, &types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
		}
	}
	return in, nil
}

// Bedrock error codes that retrying cannot fix, with the reason given to the
// user. Everything else (ThrottlingException, ServiceUnavailableException,
// InternalServerException, ModelStreamErrorException, ModelErrorException, ModelTimeoutException,
// ModelNotReadyException, ServiceQuotaExceededException, transport errors)
// is retried by the engine.
var bedrockPermanent = map[string]string{
	"AccessDeniedException":       "access denied (the role needs bedrock:InvokeModelWithResponseStream on this model, and model access must be enabled)",
	"ValidationException":         "the request was rejected as invalid",
	"ResourceNotFoundException":   "the model was not found (check the model ID and region)",
	"UnrecognizedClientException": "the credentials were not recognised",
}

func (m *bedrockModel) classify(doing string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("bedrock model %s: %s: %w", m.cfg.ModelID, doing, err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if reason, ok := bedrockPermanent[ae.ErrorCode()]; ok {
			return runtime.Permanent(fmt.Errorf("bedrock model %s: %s: %w", m.cfg.ModelID, reason, err))
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		if s := re.HTTPStatusCode(); s >= 400 && s < 500 && s != 408 && s != 429 {
			return runtime.Permanent(fmt.Errorf("bedrock model %s: %s: HTTP %d: %w", m.cfg.ModelID, doing, s, err))
		}
		if re.Response != nil && re.Response.Response != nil {
			return withRetryAfter(fmt.Errorf("bedrock model %s: %s: %w", m.cfg.ModelID, doing, err), re.Response.Header, time.Now())
		}
	}
	return fmt.Errorf("bedrock model %s: %s: %w", m.cfg.ModelID, doing, err)
}

// detachedBody hands the HTTP client a request body of its own, read from
// the SDK's before the request is sent.
//
// Without it a stream could die a few milliseconds in ("decode event: ...
// use of closed network connection"; TestDetachedBodyKeepsTheStream).
// smithy-go closes the request body it built as soon as the client's Do
// returns, that is when the response headers arrive; once closed, that
// body's WriteTo returns io.EOF. net/http's write loop, after sending a
// body of known length, copies what is left of it to see that nothing is
// (a WriteTo when the body has one), and takes any error there, io.EOF
// included, as a failed write: it closes the connection, and with it the
// response body the event stream is still reading. The window is between
// the body's last byte and that check, so a server that answers fast, on a
// busy machine, hits it (about 1 stream in 12 against a local server on
// 2 loaded cores). A body of the client's own is never closed under it.
// The copy costs one more buffer of the request's size (the SDK has
// already marshalled the request in memory) per completion.
type detachedBody struct{ inner aws.HTTPClient }

func (d detachedBody) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength < 0 {
		return d.inner.Do(req) // no body, or a streamed one (an input event stream)
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the request body to send: %w", err)
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(b))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	out.ContentLength = int64(len(b))
	return d.inner.Do(out)
}
