package main

import (
	"hash/fnv"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// The unique profile's text must not be trivially compressible: zstd at its
// fastest level should shrink it about as much as English prose (2.5-4x),
// not 10x. This guards the benchmark's honesty, not a speed.
func TestProseCompressesLikeEnglish(t *testing.T) {
	p := newProse()
	var text []byte
	for i := range 600 {
		text = append(text, p.text(uint64(i), 95)...)
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	defer enc.Close()
	ratio := float64(len(text)) / float64(len(enc.EncodeAll(text, nil)))
	t.Logf("zstd fastest ratio on %d bytes of generated prose: %.2f", len(text), ratio)
	if ratio < 2.2 || ratio > 4.5 {
		t.Fatalf("ratio %.2f is not English-like", ratio)
	}
}

func TestSeedOfIsFNV1a(t *testing.T) {
	for _, parts := range [][]string{{}, {""}, {"chunk", "cmpl_x", "3"}, {"user", "agent-000001", "20"}} {
		h := fnv.New64a()
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
		if got, want := seedOf(parts...), h.Sum64(); got != want {
			t.Fatalf("seedOf(%q) = %x, want %x", parts, got, want)
		}
	}
}
