package local

import "github.com/agentslice/agentslice/internal/runtime"

// AppendItems appends the compact binary form of items (the one frozen
// histories use, derivable IDs left out) to b. first is the own position of
// items[0] in the thread, which the derived IDs depend on, as on the
// thread's incarnation inc (ThreadState.Incarnation). Durable stores
// use it for their item rows, so it is a format on disk: change it only in
// ways that still decode what was written before (a new flag bit, as
// flagExtra and flagAt did); internal/disk's fixture test decodes rows written by an
// earlier version.
func AppendItems(b []byte, threadID, inc string, first int, items []runtime.Item) []byte {
	var c itemCursor
	for i := range items {
		b = appendItem(b, threadID, inc, first+i, &items[i], &c)
	}
	return b
}

// DecodeItems appends to dst the items AppendItems wrote for the same thread,
// incarnation and first position. The strings of the decoded items point into b, which
// the caller must not modify afterwards.
func DecodeItems(dst []runtime.Item, b []byte, threadID, inc string, first int) ([]runtime.Item, error) {
	return decodeItemsAt(dst, b, threadID, inc, first)
}
