package runtime

import "sync"

// textBuffers recycles the byte buffers completions stream into: a slice
// made one per slice (2 KiB, zeroed) was a tenth of the allocated bytes per
// completion in the density benchmark's profile. What reaches history is a
// string copied out of the buffer, so a buffer is never referenced after
// its slice.
var textBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledText is the largest buffer kept for reuse; a rare huge
// completion's buffer goes to the garbage collector instead.
const maxPooledText = 64 << 10

// getTextBuffer returns an empty buffer and the handle to give back to
// putTextBuffer with the buffer as it grew.
// getTextBuffer returns an empty buffer and the handle to give back to
// putTextBuffer with the buffer as it grew.
func getTextBuffer() (*[]byte, []byte) {
	h := textBuffers.Get().(*[]byte)
	return h, (*h)[:0]
}

func putTextBuffer(h *[]byte, b []byte) {
	if cap(b) > maxPooledText {
		return
	}
	*h = b[:0]
	textBuffers.Put(h)
}

// turnBuffer collects one streamed completion. Nothing reaches history until
// the completion has ended without error; a failed stream is discarded. Its
// byte buffers are reused across the completions of a slice.
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
