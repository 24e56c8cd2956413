package local

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The hot form of a thread's history is a byte log of items in a compact
// binary encoding: kind, flags, then length-prefixed strings. It is about
// the size of the text it carries, and decoding it allocates only the Item
// structs: strings point into the log, which is never modified in place
// (appends may move it; the old array stays valid while referenced).

const (
	flagError byte = 1 << iota
	flagUsage
	flagContent
)

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendItem(b []byte, it *runtime.Item) []byte {
	var flags byte
	if it.IsError {
		flags |= flagError
	}
	if it.Usage != nil {
		flags |= flagUsage
	}
	if len(it.Content) > 0 {
		flags |= flagContent
	}
	b = append(b, byte(it.Kind), flags)
	for _, s := range [...]string{it.Input, it.Text, it.Reasoning, it.CallID, it.Name, it.Args} {
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
	return b
}

var errCorrupt = errors.New("local: corrupt history log")

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

// decodeItems appends the first limit items of log to dst (all when limit < 0).
func decodeItems(dst []runtime.Item, log []byte, limit int) ([]runtime.Item, error) {
	r := logReader{b: log}
	for len(r.b) > 0 && limit != 0 {
		if len(r.b) < 2 {
			return dst, errCorrupt
		}
		it := runtime.Item{Kind: runtime.ItemKind(r.b[0])}
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
		if r.err != nil {
			return dst, r.err
		}
		dst = append(dst, it)
		limit--
	}
	return dst, nil
}
