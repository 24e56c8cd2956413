package model

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Texts the Bedrock mapping adds; tests pin them.
const (
	// bedrockStartText opens a conversation whose history starts with an
	// assistant turn: Converse wants the first message from the user.
	bedrockStartText = "(conversation start)"
	// errorPrefix marks an error result for models without toolResult.status.
	errorPrefix = "error: "
)

// bedrockMessages maps the turns to Converse messages: tool turns become
// user messages with toolResult blocks, adjacent user messages merge (roles
// must alternate), and the first message is from the user.
func bedrockMessages(turns []turn, images, withStatus bool) []types.Message {
	var out []types.Message
	add := func(r types.ConversationRole, blocks []types.ContentBlock) {
		if len(blocks) == 0 {
			return
		}
		if k := len(out); k > 0 && out[k-1].Role == r {
			out[k-1].Content = append(out[k-1].Content, blocks...)
			return
		}
		out = append(out, types.Message{Role: r, Content: blocks})
	}
	for _, t := range turns {
		r := types.ConversationRoleUser
		if t.role == roleAssistant {
			r = types.ConversationRoleAssistant
		}
		if len(out) == 0 && r == types.ConversationRoleAssistant {
			add(types.ConversationRoleUser, []types.ContentBlock{&types.ContentBlockMemberText{Value: bedrockStartText}})
		}
		blocks := make([]types.ContentBlock, 0, len(t.parts))
		for _, p := range t.parts {
			blocks = append(blocks, bedrockBlock(p, images, withStatus))
		}
		add(r, blocks)
	}
	return out
}

func bedrockBlock(p part, images, withStatus bool) types.ContentBlock {
	switch p.kind {
	case partImage:
		img, reason := bedrockImage(p.image, images)
		if reason != "" {
			return &types.ContentBlockMemberText{Value: imagePlaceholder(p.image, reason)}
		}
		return &types.ContentBlockMemberImage{Value: img}
	case partCall:
		return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: aws.String(wireCallID(p.callID)),
			Name:      aws.String(p.name),
			Input:     document.NewLazyDocument(argsObject(p.args)),
		}}
	case partReasoning:
		if r := p.reasoning; r.Redacted != "" {
			data, err := base64.StdEncoding.DecodeString(r.Redacted)
			if err == nil {
				return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberRedactedContent{Value: data}}
			}
		}
		rt := types.ReasoningTextBlock{Text: aws.String(p.reasoning.Text)}
		if p.reasoning.Signature != "" {
			rt.Signature = aws.String(p.reasoning.Signature)
		}
		return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{Value: rt}}
	case partResult:
		res := types.ToolResultBlock{ToolUseId: aws.String(wireCallID(p.callID))}
		for i, c := range p.content {
			if c.Type == "image" {
				if img, reason := bedrockImage(c, images); reason == "" {
					res.Content = append(res.Content, &types.ToolResultContentBlockMemberImage{Value: img})
				} else {
					res.Content = append(res.Content, &types.ToolResultContentBlockMemberText{Value: imagePlaceholder(c, reason)})
				}
				continue
			}
			text := c.Text
			if i == 0 && p.isError && !withStatus && !strings.HasPrefix(strings.ToLower(text), "error") {
				text = errorPrefix + text
			}
			res.Content = append(res.Content, &types.ToolResultContentBlockMemberText{Value: text})
		}
		if withStatus {
			res.Status = types.ToolResultStatusSuccess
			if p.isError {
				res.Status = types.ToolResultStatusError
			}
		}
		return &types.ContentBlockMemberToolResult{Value: res}
	}
	return &types.ContentBlockMemberText{Value: p.text}
}

// bedrockImage maps an image part; see checkImage for the reason.
func bedrockImage(c runtime.Content, images bool) (types.ImageBlock, string) {
	b, format, reason := checkImage(c, images)
	if reason != "" {
		return types.ImageBlock{}, reason
	}
	return types.ImageBlock{Format: types.ImageFormat(format), Source: &types.ImageSourceMemberBytes{Value: b}}, ""
}

// argsObject decodes a call's JSON arguments for toolUse.input, which must be
// an object. Arguments that are not one (the model produced bad JSON and got
// an error result for it) are sent as an empty object.
func argsObject(args string) map[string]any {
	dec := json.NewDecoder(bytes.NewReader([]byte(args)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
		return map[string]any{}
	}
	return m
}

// bedrockToolConfig builds toolConfig from the offered tools plus a spec for
// each tool the history calls that is not offered (receive_event__injected,
// retired tools). Converse rejects a request whose messages hold toolUse or
// toolResult blocks without a toolConfig, and a tool referenced in history
// should be described there; the extra specs say not to call them (if the
// model does anyway, the engine answers with an error result). It returns
// nil when there is nothing to describe.
func bedrockToolConfig(offered []runtime.ToolSpec, turns []turn, cache bool) (*types.ToolConfiguration, error) {
	specs := append(append([]runtime.ToolSpec(nil), offered...), historyOnlyTools(turns, offered)...)
	if len(specs) == 0 {
		return nil, nil
	}
	tc := &types.ToolConfiguration{}
	for _, s := range specs {
		schema, err := schemaObject(s)
		if err != nil {
			return nil, err
		}
		spec := types.ToolSpecification{Name: aws.String(s.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)}}
		if s.Description != "" {
			spec.Description = aws.String(s.Description)
		}
		tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
	}
	if cache {
		tc.Tools = append(tc.Tools, &types.ToolMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
	}
	return tc, nil
}
