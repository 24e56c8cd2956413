package main

import (
	_ "embed"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

//go:embed words.txt
var wordList string

// prose generates English-like text: words drawn from a Zipf distribution
// over a vocabulary of common English words and their inflections, in
// sentences of varying length with capitals, commas and full stops, with the
// occasional number or identifier. It is deterministic for a given seed.
// Its point is honest compressibility: zstd shrinks it about as much as it
// shrinks real prose (the load test prints the measured ratio), so a
// density figure on it cannot come from repeated text.
type prose struct {
	vocab []string
	cdf   []float64
	next  [][]int // per word, its usual successors (bigram structure)
}

// successors per word and how often the next word follows from them.
const (
	successors    = 8
	bigramPercent = 65
)

var suffixes = []string{"", "s", "ed", "ing", "er", "ly", "ness", "ation", "able", "ful"}

func newProse() *prose {
	base := strings.Fields(wordList)
	var vocab []string
	// Base words first (most frequent), then inflections (rarer).
	for _, suf := range suffixes {
		for _, w := range base {
			if suf == "" || len(w) > 3 {
				vocab = append(vocab, w+suf)
			}
		}
	}
	cdf := make([]float64, len(vocab))
	total := 0.0
	for i := range vocab {
		total += 1 / math.Pow(float64(i+1), 1.0)
		cdf[i] = total
	}
	for i := range cdf {
		cdf[i] /= total
	}
	p := &prose{vocab: vocab, cdf: cdf, next: make([][]int, len(vocab))}
	r := rand.New(rand.NewPCG(7, 11))
	for i := range p.next {
		p.next[i] = make([]int, successors)
		for k := range p.next[i] {
			p.next[i][k] = p.rank(r)
		}
	}
	return p
}

func (p *prose) rank(r *rand.Rand) int {
	x := r.Float64()
	lo, hi := 0, len(p.cdf)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if p.cdf[mid] < x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// word picks the word after prev (-1 at a sentence start): often one of
// prev's usual successors, the more usual the likelier, else any word.
func (p *prose) word(r *rand.Rand, prev int) int {
	if prev >= 0 && r.IntN(100) < bigramPercent {
		k := 0
		for k < successors-1 && r.IntN(2) == 0 {
			k++
		}
		return p.next[prev][k]
	}
	return p.rank(r)
}

// text returns exactly n bytes of prose for the seed.
func (p *prose) text(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var b strings.Builder
	b.Grow(n + 200)
	for b.Len() < n {
		words := 6 + r.IntN(18)
		prev := -1
		for i := 0; i < words; i++ {
			var w string
			switch x := r.IntN(100); {
			case x < 2:
				w = strconv.Itoa(r.IntN(10000))
				prev = -1
			case x < 3:
				w = p.vocab[p.word(r, -1)] + "_" + p.vocab[p.word(r, -1)]
				prev = -1
			default:
				prev = p.word(r, prev)
				w = p.vocab[prev]
			}
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			b.WriteString(w)
			switch {
			case i == words-1:
				b.WriteString(". ")
			case r.IntN(9) == 0:
				b.WriteString(", ")
			default:
				b.WriteByte(' ')
			}
		}
	}
	return b.String()[:n]
}

// pool is a long stretch of prose from which the unique profile cuts its
// texts at offsets derived from (agent, turn, completion, chunk). Cutting is
// what a model's output costs here, so the benchmark measures the runtime
// rather than a text generator; every agent still gets different text, and
// no agent's history repeats itself.
type pool struct{ text string }

func newPool(p *prose, size int) *pool {
	var b strings.Builder
	b.Grow(size)
	for i := uint64(0); b.Len() < size; i++ {
		b.WriteString(p.text(i, 64<<10))
	}
	return &pool{text: b.String()[:size]}
}

// cut returns n bytes of the pool at a position derived from seed.
func (pl *pool) cut(seed uint64, n int) string {
	off := int(seed % uint64(len(pl.text)-n))
	return pl.text[off : off+n]
}
