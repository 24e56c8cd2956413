package local

import "sync"

// Frozen histories are kept in an arena of large slabs rather than one Go
// allocation each. One allocation per frame would be rounded up to a size
// class (a 23 KB frame lands in the 24 KB class) and would share spans with
// short-lived garbage, which keeps whole pages resident after the garbage
// is gone. Slabs are large objects with pages of their own, frames are
// packed end to end (a frame may continue in the next slab), and slabs that
// thawing has left mostly empty are compacted by moving their frames.

const slabSize = 256 << 10

type slab struct {
	buf    []byte    // len: bytes used; cap: slabSize
	live   int       // bytes of frames still referenced
	owners []*record // records that put a piece here (stale entries allowed)
}

type piece struct {
	s      *slab
	off, n int32
}

// frame is a compressed history: one piece, or a few when it crosses slabs.
// The first piece is held inline and the rest behind a pointer, so that a
// frame is 24 bytes and costs no allocation of its own in the usual case
// (the record holding it is one 48-byte object per idle thread).
type frame struct {
	first piece
	more  *[]piece // the pieces after the first, in order; nil for most frames
}

// pieces calls fn for each piece in order.
func (f frame) pieces(fn func(piece)) {
	if f.first.s == nil {
		return
	}
	fn(f.first)
	if f.more != nil {
		for _, p := range *f.more {
			fn(p)
		}
	}
}

func (f frame) len() int {
	n := 0
	f.pieces(func(p piece) { n += int(p.n) })
	return n
}

// bytes returns the frame's bytes, contiguous. Slab bytes are never
// overwritten once written, so this needs no lock.
func (f frame) bytes() []byte {
	if f.more == nil {
		p := f.first
		if p.s == nil {
			return nil
		}
		return p.s.buf[p.off : p.off+p.n : p.off+p.n]
	}
	out := make([]byte, 0, f.len())
	f.pieces(func(p piece) { out = append(out, p.s.buf[p.off:p.off+p.n]...) })
	return out
}

// add appends a piece to the frame.
func (f *frame) add(p piece) {
	switch {
	case f.first.s == nil:
		f.first = p
	case f.more == nil:
		f.more = &[]piece{p}
	default:
		*f.more = append(*f.more, p)
	}
}

type arena struct {
	mu    sync.Mutex
	cur   *slab
	slabs map[*slab]struct{}
	size  int
}

func newArena(size int) *arena { return &arena{slabs: map[*slab]struct{}{}, size: size} }

// alloc copies b into the arena for owner.
func (a *arena) alloc(b []byte, owner *record) frame {
	a.mu.Lock()
	defer a.mu.Unlock()
	var f frame
	for len(b) > 0 {
		if a.cur == nil || len(a.cur.buf) == cap(a.cur.buf) {
			a.cur = &slab{buf: make([]byte, 0, a.size)}
			a.slabs[a.cur] = struct{}{}
		}
		s := a.cur
		n := min(len(b), cap(s.buf)-len(s.buf))
		off := len(s.buf)
		s.buf = append(s.buf, b[:n]...)
		s.live += n
		if k := len(s.owners); k == 0 || s.owners[k-1] != owner {
			s.owners = append(s.owners, owner)
		}
		f.add(piece{s: s, off: int32(off), n: int32(n)})
		b = b[n:]
	}
	return f
}

// free gives a frame's bytes back; an emptied slab is dropped.
func (a *arena) free(f frame) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f.pieces(func(p piece) {
		p.s.live -= int(p.n)
		if p.s.live == 0 && p.s != a.cur {
			delete(a.slabs, p.s)
		}
	})
}

// sparse returns the full slabs less than half live, with their owners.
func (a *arena) sparse() map[*slab][]*record {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out map[*slab][]*record
	for s := range a.slabs {
		if s != a.cur && s.live*2 < cap(s.buf) {
			if out == nil {
				out = map[*slab][]*record{}
			}
			out[s] = s.owners
			s.owners = nil
		}
	}
	return out
}

// uses reports whether f has a piece in s.
func (f frame) uses(s *slab) bool {
	found := false
	f.pieces(func(p piece) { found = found || p.s == s })
	return found
}

// stats returns the bytes the arena holds and how many of them are live.
func (a *arena) stats() (held, live int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for s := range a.slabs {
		held += cap(s.buf)
		live += s.live
	}
	return held, live
}
