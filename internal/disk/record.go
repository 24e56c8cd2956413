package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
)

// A journal record is framed as
//
//	length  uint32 little endian: bytes of payload
//	crc     uint32 little endian: CRC-32C of the payload followed by the
//	        segment's number (uint64 little endian)
//	payload kind byte, then the kind's fields
//
// Fields are unsigned varints and length-prefixed byte strings. Writers
// frame a record with the CRC of the payload alone, on their own goroutine
// while the payload is still in their cache; the journal seals it (seal)
// once it knows the segment the record goes to, which extends that CRC by
// eight bytes. (Journals written before that hold the CRC of the segment's
// number followed by the payload; unframe accepts both, so a crash left by
// an older build still replays.) Segment files are reused (see
// journal.go), so what follows a segment's last record may be records of the
// file's earlier life: their CRCs were computed with another segment number
// and fail. A segment that was cut ends with a recEnd record; only the last
// segment may end without one, in a record cut short by a crash (never
// acknowledged) or in such leftovers.

const frameHeader = 8

// maxRecord bounds a record's payload: a larger length is taken as damage,
// not as a reason to allocate.
const maxRecord = 1 << 30

const (
	recCommit    = 1 // a history commit
	recInboxPut  = 2 // messages accepted
	recInboxDone = 3 // messages consumed
	recEnd       = 4 // the segment was cut here: nothing follows
	// recCommitKept is a history commit whose state lists only the
	// children after the first kept of the thread's previous state
	// (commitRec.kept): a thread's list of children grows with its age,
	// and writing it whole in every commit made a slice's journal write,
	// and its CPU, grow with it. An older build refuses the kind.
	recCommitKept = 5
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errTorn is a record cut short or failing its CRC.
var errTorn = errors.New("record cut short or damaged")

// frame appends to b a framed record whose payload put appends, with the
// CRC of the payload alone (seal makes it the record's). size is a guess of
// the payload's size, to allocate once.
func frame(b []byte, size int, put func([]byte) []byte) []byte {
	b = slices.Grow(b, frameHeader+size)
	start := len(b)
	b = append(b, make([]byte, frameHeader)...)
	b = put(b)
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-frameHeader))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(b[start+frameHeader:], castagnoli))
	return b
}

// Record buffers are recycled: a commit's record, and the scratch space its
// state and items are encoded in, are built on the committing goroutine,
// and the journal copies the record into its group's buffer, after which
// nothing refers to it (jreq.pooled). This saved three allocations of about
// a kilobyte per commit.
var recBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuf keeps a rare large record's buffer out of the pool.
const maxPooledBuf = 64 << 10

func getBuf() *[]byte { return recBufs.Get().(*[]byte) }

func putBuf(p *[]byte) {
	if p == nil || cap(*p) > maxPooledBuf {
		return
	}
	*p = (*p)[:0]
	recBufs.Put(p)
}

// recordCRC is the CRC of a payload in segment seg.
func recordCRC(seg uint64, payload []byte) uint32 {
	return salt(crc32.Checksum(payload, castagnoli), seg)
}

// salt extends a payload's CRC by the segment's number.
func salt(crc uint32, seg uint64) uint32 {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], seg)
	return crc32.Update(crc, castagnoli, n[:])
}

// oldRecordCRC is the CRC of journals written before the payload came
// first (the segment's number, then the payload).
func oldRecordCRC(seg uint64, payload []byte) uint32 {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], seg)
	return crc32.Update(crc32.Checksum(n[:], castagnoli), castagnoli, payload)
}

// seal turns the payload CRC that frame left in the one framed record in
// rec into its CRC for segment seg.
func seal(rec []byte, seg uint64) {
	binary.LittleEndian.PutUint32(rec[4:], salt(binary.LittleEndian.Uint32(rec[4:]), seg))
}

// unframe splits the first framed record of segment seg off b. It returns
// errTorn when b holds less than a whole record or the record fails its
// check.
func unframe(b []byte, seg uint64) (payload, rest []byte, err error) {
	if len(b) < frameHeader {
		return nil, b, errTorn
	}
	n := binary.LittleEndian.Uint32(b)
	if n == 0 || n > maxRecord || int(n) > len(b)-frameHeader {
		return nil, b, errTorn
	}
	payload = b[frameHeader : frameHeader+int(n)]
	if crc := binary.LittleEndian.Uint32(b[4:]); recordCRC(seg, payload) != crc && oldRecordCRC(seg, payload) != crc {
		return nil, b, errTorn
	}
	return payload, b[frameHeader+int(n):], nil
}

func putUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func putBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func putString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader takes a payload apart; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }

// readVarint reads one varint with dec (binary.Uvarint or binary.Varint).
func readVarint[T int64 | uint64](r *reader, dec func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	v, n := dec(r.b)
	if n <= 0 {
		r.err = errors.New("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) int() int {
	v := r.uvarint()
	if v > 1<<40 {
		r.err = fmt.Errorf("number %d out of range", v)
		return 0
	}
	return int(v)
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("field of %d bytes, %d left", n, len(r.b))
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) string() string { return string(r.bytes()) }

// commitRec is a history commit as the journal holds it: what the SQL of
// a commit would have written.
type commitRec struct {
	thread, parent  string
	expected        int64
	version, length int
	oldLen          int
	state           []byte // JSON
	items           []byte // local.AppendItems from oldLen; nil for none
	attention       int
	kids            []kidRec
	// kept is how many of the previous state's children (version
	// expected) precede the children state lists (recCommitKept); 0: the
	// list is whole (recCommit).
	kept int
}

type kidRec struct {
	id, parent      string
	spawnAt         int
	version, length int
	attention       int
	state           []byte
}

// size is about what put appends.
func (c *commitRec) size() int {
	n := 64 + len(c.thread) + len(c.parent) + len(c.state) + len(c.items)
	for _, k := range c.kids {
		n += 32 + len(k.id) + len(k.parent) + len(k.state)
	}
	return n
}

func (c *commitRec) put(b []byte) []byte {
	if c.kept > 0 {
		b = append(b, recCommitKept)
	} else {
		b = append(b, recCommit)
	}
	b = putString(b, c.thread)
	b = putString(b, c.parent)
	b = putUvarint(b, uint64(c.expected))
	b = putUvarint(b, uint64(c.version))
	b = putUvarint(b, uint64(c.length))
	b = putUvarint(b, uint64(c.oldLen))
	b = putUvarint(b, uint64(c.attention))
	b = putBytes(b, c.state)
	b = putBytes(b, c.items)
	b = putUvarint(b, uint64(len(c.kids)))
	for _, k := range c.kids {
		b = putString(b, k.id)
		b = putString(b, k.parent)
		b = putUvarint(b, uint64(k.spawnAt))
		b = putUvarint(b, uint64(k.version))
		b = putUvarint(b, uint64(k.length))
		b = putUvarint(b, uint64(k.attention))
		b = putBytes(b, k.state)
	}
	if c.kept > 0 {
		b = putUvarint(b, uint64(c.kept))
	}
	return b
}

// read reads what put wrote after the kind byte (recCommit or
// recCommitKept).
func (c *commitRec) read(r *reader, kind byte) {
	c.thread, c.parent = r.string(), r.string()
	c.expected = int64(r.uvarint())
	c.version, c.length, c.oldLen, c.attention = r.int(), r.int(), r.int(), r.int()
	c.state, c.items = r.bytes(), r.bytes()
	if len(c.items) == 0 {
		c.items = nil
	}
	n := r.int()
	if n > len(r.b) {
		r.err = fmt.Errorf("%d children in %d bytes", n, len(r.b))
		return
	}
	for range n {
		var k kidRec
		k.id, k.parent = r.string(), r.string()
		k.spawnAt, k.version, k.length, k.attention = r.int(), r.int(), r.int(), r.int()
		k.state = r.bytes()
		c.kids = append(c.kids, k)
	}
	if kind == recCommitKept {
		if c.kept = r.int(); r.err == nil && c.kept <= 0 {
			r.err = fmt.Errorf("a commit keeping %d children", c.kept)
		}
	}
}

// inboxRec is recInboxPut (entries with bodies) or recInboxDone (no
// bodies).
type inboxRec struct {
	kind    byte
	entries []inboxEntry
}

type inboxEntry struct {
	thread, id string
	body       []byte // recInboxPut only
}

// size is about what put appends.
func (in *inboxRec) size() int {
	n := 16
	for _, e := range in.entries {
		n += 16 + len(e.thread) + len(e.id) + len(e.body)
	}
	return n
}

func (in *inboxRec) put(b []byte) []byte {
	b = append(b, in.kind)
	b = putUvarint(b, uint64(len(in.entries)))
	for _, e := range in.entries {
		b = putString(b, e.thread)
		b = putString(b, e.id)
		if in.kind == recInboxPut {
			b = putBytes(b, e.body)
		}
	}
	return b
}

func (in *inboxRec) read(r *reader) {
	n := r.int()
	if n > len(r.b) {
		r.err = fmt.Errorf("%d entries in %d bytes", n, len(r.b))
		return
	}
	for range n {
		e := inboxEntry{thread: r.string(), id: r.string()}
		if in.kind == recInboxPut {
			e.body = r.bytes()
		}
		in.entries = append(in.entries, e)
	}
}
