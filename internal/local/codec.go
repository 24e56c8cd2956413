package local

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"unsafe"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The frozen form of a thread is a zstd frame of: a header (the thread's
// state as JSON, its spawn point) and its items in a compact binary log:
// kind, flags, then length-prefixed strings. IDs the runtime derives (a
// model's call ID from the thread, its incarnation and the position, a result's message ID and
// call ID from the call) are not stored but flagged and derived again when
// decoding, after checking at encode time that they really are the derived
// ones: the encoding is lossless for any history. An item's time is the
// difference to the previous item's, left out when there is none (items
// of one commit share a time, so most cost nothing). Decoded strings point into the decompressed log,
// which is never modified.

const (
	flagError byte = 1 << iota
	flagUsage
	flagContent
	flagDerivedCall  // CallID == runtime.CallIDAt(thread, incarnation, position)
	flagSameCall     // CallID == the CallID of the previous tool call item
	flagDerivedInput // Input == runtime.ResultID(thread, CallID)
	flagExtra        // rare fields follow as JSON (itemExtra)
	flagAt           // Item.At differs from the previous item's (0 before the first): the difference follows as a signed varint
)

// itemExtra holds an item's rarely set fields, stored as one JSON string
// after the others so that common items pay nothing for them.
type itemExtra struct {
	CacheWrite int                     `json:"cw,omitempty"`
	Trace      *runtime.ReasoningTrace `json:"rt,omitempty"`
}

// kindTook, set in an item's kind byte (kinds are small numbers), says
// that Item.Took follows the item as an unsigned varint. Logs written
// before items had durations never set it.
const kindTook byte = 0x80

var errCorrupt = errors.New("local: corrupt frozen history")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encodeFrozen appends the frozen form of a thread to b.
func encodeFrozen(b []byte, threadID string, state *runtime.ThreadState, spawnAt int, items []runtime.Item) ([]byte, error) {
	st, err := json.Marshal(state)
	if err != nil {
		return b, err
	}
	b = appendString(b, string(st))
	b = binary.AppendUvarint(b, uint64(spawnAt))
	var c itemCursor
	for i := range items {
		b = appendItem(b, threadID, state.Incarnation, i, &items[i], &c)
	}
	return b, nil
}

// itemCursor is what an item's encoding depends on of the items before it.
type itemCursor struct {
	lastCall string
	lastAt   runtime.Stamp
}

func appendItem(b []byte, threadID, inc string, pos int, it *runtime.Item, c *itemCursor) []byte {
	lastCall := &c.lastCall
	var flags byte
	if it.At != c.lastAt {
		flags |= flagAt
	}
	if it.IsError {
		flags |= flagError
	}
	if it.Usage != nil {
		flags |= flagUsage
	}
	if len(it.Content) > 0 {
		flags |= flagContent
	}
	var extra []byte
	if x := (itemExtra{Trace: it.Trace}); it.Trace != nil || (it.Usage != nil && it.Usage.CacheWrite != 0) {
		if it.Usage != nil {
			x.CacheWrite = it.Usage.CacheWrite
		}
		extra, _ = json.Marshal(x) // strings and ints: cannot fail
		flags |= flagExtra
	}
	callID, input := it.CallID, it.Input
	switch it.Kind {
	case runtime.ItemToolCall:
		if callID != "" && runtime.IsCallIDAt(callID, threadID, inc, pos) {
			flags |= flagDerivedCall
			callID = ""
		}
		*lastCall = it.CallID
	case runtime.ItemToolResult:
		if callID != "" && callID == *lastCall {
			flags |= flagSameCall
			callID = ""
		}
		if input != "" && runtime.IsResultID(input, threadID, it.CallID) {
			flags |= flagDerivedInput
			input = ""
		}
	}
	kind := byte(it.Kind)
	if it.Took != 0 {
		kind |= kindTook
	}
	b = append(b, kind, flags)
	for _, s := range [...]string{input, it.Text, it.Reasoning, callID, it.Name, it.Args} {
		b = appendString(b, s)
	}
	if it.Usage != nil {
		u := it.Usage
		for _, v := range [...]int{u.Input, u.Output, u.Cached, u.Total} {
			b = binary.AppendUvarint(b, uint64(v))
		}
	}
	if len(it.Content) > 0 {
		b = binary.AppendUvarint(b, uint64(len(it.Content)))
		for _, c := range it.Content {
			for _, s := range [...]string{c.Type, c.Text, c.Data, c.MediaType} {
				b = appendString(b, s)
			}
		}
	}
	if extra != nil {
		b = appendString(b, string(extra))
	}
	if flags&flagAt != 0 {
		b = binary.AppendVarint(b, int64(it.At-c.lastAt))
		c.lastAt = it.At
	}
	if it.Took != 0 {
		b = binary.AppendUvarint(b, uint64(it.Took))
	}
	return b
}

type logReader struct {
	b   []byte
	err error
}

func (r *logReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *logReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *logReader) str() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errCorrupt
		r.b = nil
		return ""
	}
	if n == 0 {
		return ""
	}
	s := unsafe.String(&r.b[0], int(n))
	r.b = r.b[n:]
	return s
}

// decodeFrozen reads what encodeFrozen wrote.
func decodeFrozen(b []byte, threadID string) (state runtime.ThreadState, spawnAt int, items []runtime.Item, err error) {
	r := logReader{b: b}
	st := r.str()
	spawnAt = int(r.uvarint())
	if r.err != nil {
		return state, 0, nil, r.err
	}
	if err := json.Unmarshal([]byte(st), &state); err != nil {
		return state, 0, nil, errCorrupt
	}
	items, err = decodeItems(make([]runtime.Item, 0, state.Length+viewHeadroom), r.b, threadID, state.Incarnation)
	return state, spawnAt, items, err
}

func decodeItems(dst []runtime.Item, log []byte, threadID, inc string) ([]runtime.Item, error) {
	return decodeItemsAt(dst, log, threadID, inc, 0)
}

// decodeItemsAt decodes items whose first one is at own position first,
// of a thread of incarnation inc.
func decodeItemsAt(dst []runtime.Item, log []byte, threadID, inc string, first int) ([]runtime.Item, error) {
	r := logReader{b: log}
	lastCall := ""
	var lastAt runtime.Stamp
	for pos := first; len(r.b) > 0; pos++ {
		if len(r.b) < 2 {
			return dst, errCorrupt
		}
		it := runtime.Item{Kind: runtime.ItemKind(r.b[0] &^ kindTook)}
		took := r.b[0]&kindTook != 0
		flags := r.b[1]
		r.b = r.b[2:]
		it.Input, it.Text, it.Reasoning = r.str(), r.str(), r.str()
		it.CallID, it.Name, it.Args = r.str(), r.str(), r.str()
		it.IsError = flags&flagError != 0
		if flags&flagUsage != 0 {
			it.Usage = &runtime.Usage{Input: int(r.uvarint()), Output: int(r.uvarint()), Cached: int(r.uvarint()), Total: int(r.uvarint())}
		}
		if flags&flagContent != 0 {
			n := r.uvarint()
			if n > uint64(len(r.b)) {
				return dst, errCorrupt
			}
			it.Content = make([]runtime.Content, n)
			for i := range it.Content {
				it.Content[i] = runtime.Content{Type: r.str(), Text: r.str(), Data: r.str(), MediaType: r.str()}
			}
		}
		if flags&flagExtra != 0 {
			var x itemExtra
			if err := json.Unmarshal([]byte(r.str()), &x); err != nil || r.err != nil {
				return dst, errCorrupt
			}
			it.Trace = x.Trace
			if x.CacheWrite != 0 {
				if it.Usage == nil {
					return dst, errCorrupt
				}
				it.Usage.CacheWrite = x.CacheWrite
			}
		}
		if flags&flagAt != 0 {
			lastAt += runtime.Stamp(r.varint())
		}
		it.At = lastAt
		if took {
			v := r.uvarint()
			if v > math.MaxUint32 {
				return dst, errCorrupt
			}
			it.Took = uint32(v)
		}
		if r.err != nil {
			return dst, r.err
		}
		switch {
		case flags&flagDerivedCall != 0:
			it.CallID = runtime.CallIDAt(threadID, inc, pos)
		case flags&flagSameCall != 0:
			it.CallID = lastCall
		}
		if it.Kind == runtime.ItemToolCall {
			lastCall = it.CallID
		}
		if flags&flagDerivedInput != 0 {
			it.Input = runtime.ResultID(threadID, it.CallID)
		}
		dst = append(dst, it)
	}
	return dst, nil
}
