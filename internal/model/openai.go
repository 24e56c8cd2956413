package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentslice/agentslice/internal/runtime"
)

// openaiModel streams chat completions from any OpenAI-compatible endpoint.
type openaiModel struct {
	cfg       Config
	client    openai.ChatCompletionService
	maxTokens string
	developer bool // instructions go in a developer message
}

func newOpenAI(cfg Config, o *options) (*openaiModel, error) {
	oc := OpenAIConfig{}
	if cfg.OpenAI != nil {
		oc = *cfg.OpenAI
	}
	base := oc.BaseURL
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	key := oc.APIKey
	if oc.APIKeyEnv != "" {
		key = o.getenv(oc.APIKeyEnv)
		if key == "" {
			return nil, &ConfigError{Model: cfg.label(), Field: "openai.api_key_env",
				Reason: fmt.Sprintf("environment variable %s is empty or unset", oc.APIKeyEnv)}
		}
	}
	hc := o.httpClient
	if hc == nil {
		hc = &http.Client{} // the completion's context bounds each request
	}
	// The service is built from explicit options only, not openai.NewClient:
	// NewClient reads OPENAI_API_KEY and OPENAI_BASE_URL from the
	// environment, which would send an OpenAI key to whatever gateway this
	// model points at. Zero SDK retries: the engine retries.
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	mt := oc.MaxTokensField
	if mt == "" {
		mt = "max_completion_tokens"
	}
	return &openaiModel{cfg: cfg, client: openai.NewChatCompletionService(opts...), maxTokens: mt,
		developer: oc.SystemRole == "developer"}, nil
}

// Info describes the model.
func (m *openaiModel) Info() Info { return infoOf(&m.cfg) }

// Complete streams one completion into w.
func (m *openaiModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	params, err := m.params(req)
	if err != nil {
		return runtime.Permanent(fmt.Errorf("openai model %s: building the request: %w", m.cfg.ModelID, err))
	}
	stream := m.client.NewStreaming(ctx, params)
	defer stream.Close()

	var (
		drafts   = map[int64]*toolDraft{}
		flushed  = map[int64]bool{}
		finished bool
	)
	emit := func(i int64) {
		d := drafts[i]
		delete(drafts, i)
		flushed[i] = true
		w.ToolCall(d.id, d.name, d.args.String())
	}
	// flushBelow emits the drafts below limit, in index order: a delta for a
	// later call (or text after the calls) means they are complete.
	flushBelow := func(limit int64) {
		idxs := make([]int64, 0, len(drafts))
		for i := range drafts {
			if i < limit {
				idxs = append(idxs, i)
			}
		}
		sort.Slice(idxs, func(a, b int) bool { return idxs[a] < idxs[b] })
		for _, i := range idxs {
			emit(i)
		}
	}
	const all = int64(1) << 62
	for stream.Next() {
		chunk := stream.Current()
		if u := chunk.Usage; u.PromptTokens > 0 || u.CompletionTokens > 0 || u.TotalTokens > 0 {
			w.Usage(runtime.Usage{Input: int(u.PromptTokens), Output: int(u.CompletionTokens),
				Cached: int(u.PromptTokensDetails.CachedTokens), Total: int(u.TotalTokens)})
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue // n is 1; ignore anything else a server sends
			}
			d := ch.Delta
			if r := reasoningDelta(d.JSON.ExtraFields); r != "" {
				w.Reasoning(r)
			}
			if d.Content != "" {
				flushBelow(all) // text after a call: the call is complete
				w.Text(d.Content)
			}
			for _, tc := range d.ToolCalls {
				dr := drafts[tc.Index]
				// Some servers send every call whole with index 0; a new ID
				// at a known index starts a new call.
				newCall := tc.ID != "" && (dr == nil || (dr.id != "" && dr.id != tc.ID))
				if dr == nil && !newCall && flushed[tc.Index] {
					return fmt.Errorf("openai model %s: tool call %d continued after a later one started", m.cfg.ModelID, tc.Index)
				}
				flushBelow(tc.Index)
				if dr != nil && newCall {
					emit(tc.Index)
					dr = nil
				}
				if dr == nil {
					dr = &toolDraft{}
					drafts[tc.Index] = dr
				}
				if tc.ID != "" {
					dr.id = tc.ID
				}
				if dr.name == "" {
					dr.name = tc.Function.Name
				}
				dr.args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				finished = true
				flushBelow(all)
			}
		}
	}
	if err := stream.Err(); err != nil {
		return m.classify(err)
	}
	if !finished {
		return fmt.Errorf("openai model %s: the stream ended without a finish_reason (cut mid-turn)", m.cfg.ModelID)
	}
	flushBelow(all)
	return nil
}

// reasoningDelta reads the reasoning text OpenAI-compatible servers stream
// beside the content: "reasoning_content" (vLLM, DeepSeek, LM Studio) or
// "reasoning" (Ollama, OpenRouter, newer vLLM). OpenAI itself streams none.
func reasoningDelta(extra map[string]respjson.Field) string {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		f, ok := extra[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func (m *openaiModel) params(req *runtime.CompletionRequest) (openai.ChatCompletionNewParams, error) {
	tools, err := openaiTools(req.Tools)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	msgs := openaiMessages(normalize(req.History), m.cfg.Images)
	if req.System != "" {
		first := openai.SystemMessage(req.System)
		if m.developer {
			first = openai.DeveloperMessage(req.System)
		}
		msgs = append([]openai.ChatCompletionMessageParamUnion{first}, msgs...)
	}
	p := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(m.cfg.ModelID),
		Messages:      msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if len(tools) > 0 {
		p.Tools = tools // an empty list is rejected by some servers
	}
	if m.maxTokens == "max_tokens" {
		p.MaxTokens = openai.Int(int64(m.cfg.MaxOutputTokens))
	} else {
		p.MaxCompletionTokens = openai.Int(int64(m.cfg.MaxOutputTokens))
	}
	return p, nil
}

func (m *openaiModel) classify(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("openai model %s: %w", m.cfg.ModelID, err)
	}
	var ae *openai.Error
	if errors.As(err, &ae) {
		s := ae.StatusCode
		if s >= 400 && s < 500 && s != 408 && s != 409 && s != 429 {
			return runtime.Permanent(fmt.Errorf("openai model %s: %s: %w", m.cfg.ModelID, openaiReason(s, ae), err))
		}
		out := fmt.Errorf("openai model %s: %w", m.cfg.ModelID, err)
		if msg := serverMessage(ae); msg != "" {
			out = fmt.Errorf("openai model %s: %s: %w", m.cfg.ModelID, msg, err)
		}
		if ae.Response != nil {
			out = withRetryAfter(out, ae.Response.Header, time.Now())
		}
		return out
	}
	return fmt.Errorf("openai model %s: %w", m.cfg.ModelID, err)
}

// serverMessage is the error message the server sent, shortened for logs.
func serverMessage(ae *openai.Error) string {
	msg := strings.TrimSpace(ae.Message)
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

func openaiReason(status int, ae *openai.Error) string {
	var reason string
	switch status {
	case 400, 422:
		reason = "the request was rejected as invalid"
	case 401:
		reason = "the API key was rejected"
	case 403:
		reason = "access denied"
	case 404:
		reason = "the model or endpoint was not found (check model_id and base_url)"
	default:
		reason = fmt.Sprintf("the request was refused (HTTP %d)", status)
	}
	if msg := serverMessage(ae); msg != "" {
		reason += ": " + msg
	}
	return reason
}
