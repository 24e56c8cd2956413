package main

import (
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
