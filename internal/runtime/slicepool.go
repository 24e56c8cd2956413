package runtime

import "sync"

// A slice's working state (about 1.5 KiB: the commit and completion
// request it hands on, the turn buffer, room for its inputs) is recycled
// across RunSlice calls: allocated and zeroed once per slice it was the
// largest allocation per completion in the density benchmark's profile
// (a third of the bytes). What a slice returns, its SliceResult, is
// allocated on its own (sliceOut) because the caller keeps it.
//
// Recycling is safe because nothing the slice hands out points into it
// past the call that receives it: a Model gets the request and the turn
// writer for the duration of Complete (see Model), a HistoryStore gets the
// commit for the duration of Commit and copies what it keeps (Commit's
// Inputs alias the slice and no store keeps them; Append aliases the
// view, not the slice), a synchronous tool gets its SyncEnv for Run. A
// slice that panicked is not recycled.
var slicePool = sync.Pool{New: func() any { return new(slice) }}

// maxPooledText is the largest turn buffer a recycled slice keeps; a rare
// huge completion's buffer goes to the garbage collector instead.
const maxPooledText = 64 << 10

// sliceOut is what RunSlice returns, with room for the IDs of a typical
// slice.
type sliceOut struct {
	res     SliceResult
	procBuf [2]string
}

// newSlice returns a zeroed slice (with a recycled turn buffer) for one
// RunSlice call.
func newSlice(e *Engine, threadID string) *slice {
	s := slicePool.Get().(*slice)
	out := &sliceOut{}
	out.res.Processed = out.procBuf[:0]
	s.e, s.lim, s.threadID, s.res = e, e.Limits.withDefaults(), threadID, &out.res
	return s
}

// recycle drops everything the slice refers to, keeping its turn
// buffers' arrays, and gives it back to the pool.
func (s *slice) recycle() {
	text, reasoning := s.buf.text[:0], s.buf.reasoning[:0]
	if cap(text) > maxPooledText {
		text = nil
	}
	if cap(reasoning) > maxPooledText {
		reasoning = nil
	}
	*s = slice{}
	s.buf.text, s.buf.reasoning = text, reasoning
	slicePool.Put(s)
}
