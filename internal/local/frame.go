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
type frame struct {
	pieces []piece
	n      int
}

func (f frame) len() int { return f.n }

// bytes returns the frame's bytes, contiguous. Slab bytes are never
// overwritten once written, so this needs no lock.
func (f frame) bytes() []byte {
	if len(f.pieces) == 1 {
		p := f.pieces[0]
		return p.s.buf[p.off : p.off+p.n : p.off+p.n]
	}
	out := make([]byte, 0, f.n)
	for _, p := range f.pieces {
		out = append(out, p.s.buf[p.off:p.off+p.n]...)
	}
	return out
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
	f := frame{n: len(b)}
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
		f.pieces = append(f.pieces, piece{s: s, off: int32(off), n: int32(n)})
		b = b[n:]
	}
	return f
}

// free gives a frame's bytes back; an emptied slab is dropped.
func (a *arena) free(f frame) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range f.pieces {
		p.s.live -= int(p.n)
		if p.s.live == 0 && p.s != a.cur {
			delete(a.slabs, p.s)
		}
	}
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
	for _, p := range f.pieces {
		if p.s == s {
			return true
		}
	}
	return false
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
