package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
)

// The simulated model's sizes, the density benchmark's (and prose.js's).
const (
	chunks     = 12
	chunkBytes = 95
)

// loadWords reads the vocabulary prose.js reads, loadtest/density/words.txt.
func loadWords(root string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, "loadtest/density/words.txt"))
	if err != nil {
		return nil, fmt.Errorf("the prose vocabulary: %w", err)
	}
	w := strings.Fields(string(b))
	if len(w) == 0 {
		return nil, fmt.Errorf("the prose vocabulary %s is empty", filepath.Join(root, "loadtest/density/words.txt"))
	}
	return w, nil
}

// seedOf is prose.js's seedOf: FNV-1a (32 bit) over the parts, a zero byte
// after each.
func seedOf(parts ...string) uint32 {
	h := uint32(0x811c9dc5)
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			h = (h ^ uint32(p[i])) * 0x01000193
		}
		h *= 0x01000193
	}
	return h
}

// proseText is prose.js's text(): n bytes of words drawn with rank ~
// vocab^u (u uniform, from mulberry32), so agentslice's model does the same
// work as the peers' workers do.
func proseText(words []string, seed uint32, n int) string {
	a := seed
	next := func() float64 {
		a += 0x6d2b79f5
		t := a
		t = (t ^ (t >> 15)) * (t | 1)
		t ^= t + (t^(t>>7))*(t|61)
		return float64(t^(t>>14)) / 4294967296
	}
	var b strings.Builder
	b.Grow(n + 16)
	start := true
	for b.Len() < n {
		i := min(len(words)-1, max(int(math.Pow(float64(len(words)), next()))-1, 0))
		w := words[i]
		if start {
			w = strings.ToUpper(w[:1]) + w[1:]
			start = false
		}
		b.WriteString(w)
		switch p := next(); {
		case p < 0.08:
			b.WriteString(". ")
			start = true
		case p < 0.14:
			b.WriteString(", ")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()[:n]
}

func gomaxprocs() int { return goruntime.GOMAXPROCS(0) }
