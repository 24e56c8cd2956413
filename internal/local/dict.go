package local

import (
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// The cold tier compresses each frozen thread into one zstd frame. Small
// frames compress better with a dictionary of what such histories look
// like, so the store learns one from its own first frozen histories: it
// samples the tail of each until it has dictSize bytes, then switches to an
// encoder that refers to them. Frames written before that have no
// dictionary; the decoder in use always reads both kinds.
//
// Measured on the density benchmark's unique profile (English-like prose,
// 57 KB raw per agent, zstd SpeedFastest): 21,820 bytes per agent without a
// dictionary, 19,747 with a 110 KB raw dictionary, at about the same
// compression speed; SpeedDefault would give 20,521 without (18,434 with)
// at about twice the CPU. The dictionary costs dictSize bytes once.
// Frames carry no checksum: they never leave the process, and a corrupt
// frame still fails to decode or to parse (decodeFrozen).
//
// The window is 256 KiB instead of SpeedFastest's 4 MiB: each encoder keeps
// a history buffer of the window plus a block (4.1 MiB each was 825 bytes
// per idle agent at 20,000 agents with four encoders); a window covers the
// dictionary and 144 KiB of a history, more than the benchmark's 57 KB.
// There is one encoder per GOMAXPROCS (FreezeIdle's workers).
//
// The level is chosen once the dictionary is learned, on the next
// trialFrames histories: each is encoded at SpeedFastest and at
// SpeedDefault (the smaller frame is kept), and SpeedDefault stays if it
// stored at least denseGainPct percent fewer bytes. Prose-like histories
// gain (the density benchmark's unique profile, 20,000 agents: 20,094
// stored bytes per agent at SpeedFastest, 18,897 at SpeedDefault; make
// bench-codec: 7.3 against 9.6 µs per completion on one core of a quiet
// machine, twice the fast level's CPU under load), while
// repetitive ones do not (infinity: 159 against 164 bytes, at 2.6 times
// the codec's CPU) and keep the fast level. The decoder reads both.
const (
	window     = 256 << 10
	dictSize   = 112 << 10
	dictSample = dictSize / 8 // at most this much of one history
	dictID     = 0x6a736c63   // any non-zero ID names a raw dictionary

	trialFrames  = 16
	denseGainPct = 3
)

// codec is one encoder and the decoder that reads its frames.
type codec struct {
	enc   *zstd.Encoder
	level zstd.EncoderLevel // enc's
	dec   *zstd.Decoder
	// dense is set during the level's trial only: the SpeedDefault encoder
	// with the same dictionary, tried on the same histories as enc.
	dense *zstd.Encoder
}

// coldCodec is the store's current codec and the dictionary it learns.
type coldCodec struct {
	cur     atomic.Pointer[codec]
	learned atomic.Bool

	mu      sync.Mutex
	samples []byte
	// The level's trial (under mu): frames tried, and the bytes each
	// level stored for them.
	tried             int
	fastSum, denseSum int
}

// ColdDenseEncoderOptions are ColdEncoderOptions at SpeedDefault, the
// level that the trial after the dictionary keeps for histories it
// compresses enough better.
func ColdDenseEncoderOptions(dict []byte, concurrency int) []zstd.EOption {
	return append(ColdEncoderOptions(dict, concurrency), zstd.WithEncoderLevel(zstd.SpeedDefault))
}

// ColdEncoderOptions are the options of the cold tier's fast zstd encoder
// (one per FreezeIdle worker; concurrency is how many run at once), with
// the learned dictionary if dict is not nil. Exported, with
// ColdDenseEncoderOptions, so that the density benchmark's codec
// measurement (make bench-codec) measures these very settings.
func ColdEncoderOptions(dict []byte, concurrency int) []zstd.EOption {
	opts := []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(window), zstd.WithEncoderConcurrency(concurrency),
		zstd.WithLowerEncoderMem(true), zstd.WithZeroFrames(true), zstd.WithEncoderCRC(false)}
	if dict != nil {
		opts = append(opts, zstd.WithEncoderDictRaw(dictID, dict))
	}
	return opts
}

// AppendDictSample adds what the cold tier learns from one frozen history
// (raw, its encoded form) to the dictionary samples so far: the history's
// tail (its items, past the thread's own header), at most dictSample
// bytes, and no more than the dictionary has room for. The dictionary is
// complete when len(samples) reaches DictSize.
func AppendDictSample(samples, raw []byte) []byte {
	take := min(len(raw), dictSample, DictSize-len(samples))
	return append(samples, raw[len(raw)-take:]...)
}

// DictSize is the size of the learned dictionary.
const DictSize = dictSize

// newCodec returns the fast codec with dict, and with the dense encoder of
// the level's trial if dict is not nil.
func newCodec(dict []byte) (*codec, error) {
	conc := goruntime.GOMAXPROCS(0)
	dopts := []zstd.DOption{zstd.WithDecoderConcurrency(conc), zstd.WithDecoderLowmem(true)}
	if dict != nil {
		dopts = append(dopts, zstd.WithDecoderDictRaw(dictID, dict))
	}
	enc, err := zstd.NewWriter(nil, ColdEncoderOptions(dict, conc)...)
	if err != nil {
		return nil, fmt.Errorf("local: zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, dopts...)
	if err != nil {
		return nil, fmt.Errorf("local: zstd decoder: %w", err)
	}
	c := &codec{enc: enc, level: zstd.SpeedFastest, dec: dec}
	if dict != nil {
		if c.dense, err = zstd.NewWriter(nil, ColdDenseEncoderOptions(dict, conc)...); err != nil {
			return nil, fmt.Errorf("local: zstd encoder: %w", err)
		}
	}
	return c, nil
}

func newColdCodec() *coldCodec {
	c, err := newCodec(nil)
	if err != nil {
		panic(err) // only on invalid options
	}
	cc := &coldCodec{}
	cc.cur.Store(c)
	return cc
}

// encode compresses raw (one thread's frozen form) onto dst, and learns
// from it while the dictionary is not built yet.
func (cc *coldCodec) encode(raw, dst []byte) []byte {
	c := cc.cur.Load()
	start := len(dst)
	out := c.enc.EncodeAll(raw, dst)
	if c.dense != nil {
		out = cc.try(c, raw, out, start)
	}
	if !cc.learned.Load() {
		cc.learn(raw)
	}
	return out
}

// try is the level's trial on one history: it encodes raw densely too,
// keeps the smaller frame (out[start:] is the fast one), and once
// trialFrames histories are tried keeps the level that pays.
func (cc *coldCodec) try(c *codec, raw, out []byte, start int) []byte {
	dense := c.dense.EncodeAll(raw, nil)
	fast := len(out) - start
	if len(dense) < fast {
		out = append(out[:start], dense...)
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.cur.Load() != c {
		return out // decided meanwhile
	}
	cc.tried++
	cc.fastSum += fast
	cc.denseSum += len(dense)
	if cc.tried < trialFrames {
		return out
	}
	next := &codec{enc: c.enc, level: c.level, dec: c.dec}
	if cc.denseSum*100 <= cc.fastSum*(100-denseGainPct) {
		next.enc, next.level = c.dense, zstd.SpeedDefault
	}
	cc.cur.Store(next)
	return out
}

func (cc *coldCodec) decode(frame, dst []byte) ([]byte, error) {
	return cc.cur.Load().dec.DecodeAll(frame, dst)
}

// learn adds the tail of raw (items, past the thread's own header) to the
// samples, and switches to a dictionary codec once there are enough.
func (cc *coldCodec) learn(raw []byte) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.learned.Load() {
		return
	}
	cc.samples = AppendDictSample(cc.samples, raw)
	if len(cc.samples) < dictSize {
		return
	}
	dict := cc.samples
	cc.samples = nil
	if c, err := newCodec(dict); err == nil {
		cc.cur.Store(c)
	}
	// On an error (none is known for a raw dictionary) the store goes on
	// without one.
	cc.learned.Store(true)
}
