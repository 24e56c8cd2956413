package model

import (
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Texts the OpenAI mapping adds; tests pin them.
const (
	// imageAttachedText stands in a tool message for an image that follows
	// in a user message (tool messages carry text only).
	imageAttachedText = "[image attached in the next message]"
	imagesFromFmt     = "Images from the result of %s (%s):"
)

// openaiMessages maps the turns to chat messages: user turns become user
// messages, assistant turns one assistant message with its text and tool
// calls, tool turns one tool message per result. Images a tool returned go
// in a user message after the turn's tool messages, since tool messages hold
// text only.
func openaiMessages(turns []turn, images bool) []openai.ChatCompletionMessageParamUnion {
	var out []openai.ChatCompletionMessageParamUnion
	for _, t := range turns {
		switch t.role {
		case roleUser:
			out = append(out, openaiUser(t.parts, images))
		case roleAssistant:
			out = append(out, openaiAssistant(t.parts))
		case roleTool:
			var attach []part // user parts to send after the tool messages
			for _, p := range t.parts {
				var texts []string
				var imgs []part
				for i, c := range p.content {
					if c.Type != "image" {
						text := c.Text
						if i == 0 && p.isError && !strings.HasPrefix(strings.ToLower(text), "error") {
							text = errorPrefix + text
						}
						texts = append(texts, text)
						continue
					}
					if _, _, reason := checkImage(c, images); reason != "" {
						texts = append(texts, imagePlaceholder(c, reason))
						continue
					}
					texts = append(texts, imageAttachedText)
					imgs = append(imgs, part{kind: partImage, image: c})
				}
				out = append(out, openai.ToolMessage(strings.Join(texts, "\n\n"), wireCallID(p.callID)))
				if len(imgs) > 0 {
					attach = append(attach, part{kind: partText, text: fmt.Sprintf(imagesFromFmt, p.name, wireCallID(p.callID))})
					attach = append(attach, imgs...)
				}
			}
			if len(attach) > 0 {
				out = append(out, openaiUser(attach, images))
			}
		}
	}
	return out
}

// openaiUser sends plain text as a string (what every server accepts) and
// switches to content parts only when there is an image to send.
func openaiUser(parts []part, images bool) openai.ChatCompletionMessageParamUnion {
	var texts []string
	var content []openai.ChatCompletionContentPartUnionParam
	hasImage := false
	for _, p := range parts {
		if p.kind == partImage {
			if _, _, reason := checkImage(p.image, images); reason != "" {
				p = part{kind: partText, text: imagePlaceholder(p.image, reason)}
			} else {
				hasImage = true
				content = append(content, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
					URL: "data:" + strings.ToLower(p.image.MediaType) + ";base64," + p.image.Data}))
				continue
			}
		}
		texts = append(texts, p.text)
		content = append(content, openai.TextContentPart(p.text))
	}
	if hasImage {
		return openai.UserMessage(content)
	}
	return openai.UserMessage(strings.Join(texts, "\n\n"))
}

func openaiAssistant(parts []part) openai.ChatCompletionMessageParamUnion {
	var texts []string
	msg := openai.ChatCompletionAssistantMessageParam{}
	for _, p := range parts {
		switch p.kind {
		case partReasoning:
			// Chat completions take no reasoning back.
		case partCall:
			msg.ToolCalls = append(msg.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       wireCallID(p.callID),
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: p.name, Arguments: p.args},
				}})
		default:
			texts = append(texts, p.text)
		}
	}
	if len(texts) > 0 {
		msg.Content.OfString = openai.String(strings.Join(texts, "\n\n"))
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &msg}
}

// openaiTools maps the offered tools. Tools that only appear in history
// (receive_event__injected) are not declared: chat completions accept
// history calls to undeclared tools, and declaring them would only invite
// the model to call them.
func openaiTools(specs []runtime.ToolSpec) ([]openai.ChatCompletionToolUnionParam, error) {
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(specs))
	for _, s := range specs {
		schema, err := schemaObject(s)
		if err != nil {
			return nil, err
		}
		fd := shared.FunctionDefinitionParam{Name: s.Name, Parameters: shared.FunctionParameters(schema)}
		if s.Description != "" {
			fd.Description = openai.String(s.Description)
		}
		out = append(out, openai.ChatCompletionFunctionTool(fd))
	}
	return out, nil
}
