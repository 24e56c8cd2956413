package local

import (
	"bytes"
	"testing"
)

// AppendDictSample takes a history's tail, at most dictSample bytes, and
// never more than the dictionary has room for: the samples stop at
// DictSize exactly.
func TestAppendDictSampleStopsAtDictSize(t *testing.T) {
	raw := bytes.Repeat([]byte("abcdefghij"), 100) // 1000 bytes
	got := AppendDictSample(nil, raw)
	if !bytes.Equal(got, raw) {
		t.Fatalf("a short history: %d bytes taken, want all %d", len(got), len(raw))
	}
	long := bytes.Repeat([]byte{'x'}, 2*dictSample)
	long[len(long)-1] = 'y'
	if got := AppendDictSample(nil, long); len(got) != dictSample || got[len(got)-1] != 'y' {
		t.Fatalf("a long history: %d bytes taken, want its last %d", len(got), dictSample)
	}
	full := make([]byte, DictSize-10)
	got = AppendDictSample(full, raw)
	if len(got) != DictSize || !bytes.Equal(got[DictSize-10:], raw[len(raw)-10:]) {
		t.Fatalf("10 bytes of room: the samples are %d bytes, want %d ending with the history's last 10", len(got), DictSize)
	}
}
