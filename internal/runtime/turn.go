package runtime

// turnBuffer collects one streamed completion. Nothing reaches history until
// the completion has ended without error; a failed stream is discarded. Its
// byte buffers are reused across the completions of a slice and, with
// the slice, across slices (slicepool.go).
type turnBuffer struct {
	text, reasoning []byte
	call            *ToolCallDraft // nil, or &draft
	draft           ToolCallDraft
	dropped         int // tool calls after the first, dropped
	droppedAfter    int // bytes of text streamed after the first tool call, dropped
	usage           Usage
	blocks          []ReasoningBlock
}

// ToolCallDraft is a tool call as the model streamed it.
type ToolCallDraft struct {
	ID, Name, Args string
}

func (b *turnBuffer) reset() {
	b.text = b.text[:0]
	b.reasoning = b.reasoning[:0]
	b.call = nil
	b.dropped, b.droppedAfter = 0, 0
	b.usage = Usage{}
	b.blocks = nil
}

// ReasoningBlock implements ReasoningBlockWriter.
func (b *turnBuffer) ReasoningBlock(rb ReasoningBlock) {
	if b.call != nil {
		return
	}
	b.blocks = append(b.blocks, rb)
}

func (b *turnBuffer) Text(s string) {
	if b.call != nil {
		b.droppedAfter += len(s)
		return
	}
	b.text = append(b.text, s...)
}

func (b *turnBuffer) Reasoning(s string) {
	if b.call != nil {
		return
	}
	b.reasoning = append(b.reasoning, s...)
}

func (b *turnBuffer) ToolCall(id, name, args string) {
	if b.call != nil {
		b.dropped++
		return
	}
	b.draft = ToolCallDraft{ID: id, Name: name, Args: args}
	b.call = &b.draft
}

func (b *turnBuffer) Usage(u Usage) { b.usage = u }
