package dsql

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Formats of the TEXT columns items.body and threads.state. A new encoding
// gets a new number; decoders keep reading the old ones.
const (
	// itemFormatJSON: items.body is the JSON of runtime.Item (its json
	// tags), split into chunks at UTF-8 boundaries when large.
	itemFormatJSON int16 = 1
	// stateFormatJSON: threads.state is the JSON of runtime.ThreadState.
	// Its version and length fields are ignored on load: the columns are
	// authoritative.
	stateFormatJSON int16 = 1
)

// encodeJSON encodes v without escaping <, > and & (they would cost six
// bytes each against DSQL's size limits).
func encodeJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

func encodeItem(it *runtime.Item) (string, error) {
	if it.Kind == 0 {
		return "", fmt.Errorf("item has no kind")
	}
	return encodeJSON(it)
}

func decodeItem(format int16, body []byte) (runtime.Item, error) {
	var it runtime.Item
	if format != itemFormatJSON {
		return it, fmt.Errorf("unknown item format %d", format)
	}
	if err := json.Unmarshal(body, &it); err != nil {
		return it, fmt.Errorf("decoding item: %w", err)
	}
	if it.Kind == 0 {
		return it, fmt.Errorf("decoding item: no kind")
	}
	return it, nil
}

func encodeState(st *runtime.ThreadState) (string, error) {
	return encodeJSON(st)
}

func decodeState(format int16, body string) (runtime.ThreadState, error) {
	var st runtime.ThreadState
	if format != stateFormatJSON {
		return st, fmt.Errorf("unknown state format %d", format)
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		return st, fmt.Errorf("decoding state: %w", err)
	}
	return st, nil
}

// splitChunks cuts s into pieces of at most n bytes, each ending on a UTF-8
// character boundary so that every piece is valid TEXT. n must be at least
// utf8.UTFMax.
func splitChunks(s string, n int) []string {
	if len(s) <= n {
		return []string{s}
	}
	out := make([]string, 0, len(s)/n+1)
	for len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 { // not UTF-8 at all; cannot happen for encoding/json output
			cut = n
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return append(out, s)
}
