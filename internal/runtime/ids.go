package runtime

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"io"
	"strconv"
)

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// DeriveID mints a deterministic identifier from parts: the same parts give
// the same ID on every retry, different parts give different IDs. IDs are the
// prefix followed by 26 base32 characters (130 bits of SHA-256).
func DeriveID(prefix string, parts ...string) string {
	var stack [512]byte
	buf := stack[:0]
	for _, p := range parts {
		buf = appendPart(buf, p)
	}
	return idFrom(prefix, buf)
}

// appendPart appends one part of an ID's input, length-prefixed.
func appendPart(buf []byte, p string) []byte {
	buf = strconv.AppendInt(buf, int64(len(p)), 10)
	buf = append(buf, ':')
	return append(buf, p...)
}

// idFrom is DeriveID of parts already joined by appendPart.
func idFrom(prefix string, buf []byte) string {
	var out [64]byte
	if len(prefix) > len(out)-idEncoding.EncodedLen(16) {
		sum := sha256.Sum256(buf)
		return prefix + idEncoding.EncodeToString(sum[:16])
	}
	return string(appendIDFrom(out[:0], prefix, buf))
}

// appendIDFrom appends idFrom(prefix, buf) to dst.
func appendIDFrom(dst []byte, prefix string, buf []byte) []byte {
	sum := sha256.Sum256(buf)
	dst = append(dst, prefix...)
	n := len(dst)
	dst = append(dst, make([]byte, idEncoding.EncodedLen(16))...)
	idEncoding.Encode(dst[n:], sum[:16])
	return dst
}

// callID is the ID of the tool call recorded at position pos of a thread's
// own history, in the thread's incarnation inc (ThreadState.Incarnation).
// Positions are stable because history is append-only and commits are
// version-checked; the incarnation keeps two threads that had the same ID
// (a store wiped, a thread recreated) from issuing the same call IDs.
func callID(threadID, inc string, pos int) string {
	if id, ok := mutantCallID(threadID, pos); ok {
		return id
	}
	var stack [256]byte
	return idFrom("call_", callIDInput(stack[:0], threadID, inc, pos))
}

// callIDInput appends the parts callID derives its ID from. An empty
// incarnation (a state written before incarnations) adds nothing, so such
// a thread's IDs are the ones it always had.
func callIDInput(buf []byte, threadID, inc string, pos int) []byte {
	var num [20]byte
	buf = appendPart(buf, threadID)
	buf = appendPart(buf, string(strconv.AppendInt(num[:0], int64(pos), 10)))
	if inc != "" {
		buf = appendPart(buf, inc)
	}
	return buf
}

// CallIDAt is the ID the engine gives a model's tool call recorded at
// position pos of the own history of a thread of incarnation inc. Stores
// may use it to avoid storing IDs they can derive.
func CallIDAt(threadID, inc string, pos int) string { return callID(threadID, inc, pos) }

// IsCallIDAt reports whether id == CallIDAt(threadID, inc, pos), without
// allocating (stores check every call they encode).
func IsCallIDAt(id, threadID, inc string, pos int) bool {
	if mutantCallIDs() {
		return id == CallIDAt(threadID, inc, pos)
	}
	var stack [256]byte
	var out [64]byte
	return string(appendIDFrom(out[:0], "call_", callIDInput(stack[:0], threadID, inc, pos))) == id
}

// incarnationID is DeriveID(prefix, parts...) with the thread's
// incarnation inc mixed in ("" derives the ID as before incarnations).
// Every ID minted from a thread's ID and a position or version alone goes
// through it.
func incarnationID(prefix, inc string, parts ...string) string {
	if inc != "" {
		parts = append(parts, "inc", inc)
	}
	return DeriveID(prefix, parts...)
}

// newIncarnation is a new root thread's incarnation: 128 random bits from
// r, hashed with the thread's ID. A slice that fails before its commit
// leaves nothing derived from it outside, and its retry draws another;
// once committed it never changes. (With FixedEntropy it depends on the
// thread's ID alone, so a retry whose batch is ordered or cut otherwise
// still mints the IDs of the run it is compared with.)
func newIncarnation(r io.Reader, threadID string) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("runtime: drawing a thread's incarnation: %w", err)
	}
	return DeriveID("", idEncoding.EncodeToString(b[:]), threadID), nil
}

// FixedEntropy is an Engine.Entropy that always reads zeros: a root
// thread's incarnation is then derived from its ID alone, so separate runs
// issue the same IDs (tests, the chaos matrix, golden files). Production
// never uses it: a recreated thread would reissue its IDs.
var FixedEntropy io.Reader = zeroReader{}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// childIncarnation is the incarnation of a thread created by a commit of
// a thread of incarnation parent: derived, since the child's ID already
// comes from its parent's incarnated IDs.
func childIncarnation(parent, child string) string { return DeriveID("", child, parent) }

// ResultID is the message ID tools built on this runtime give the result of
// a call (the RAP receiver and the kit use it), so a tool that posts its
// result twice is deduplicated.
func ResultID(threadID, callID string) string { return DeriveID("res_", threadID, callID) }

// IsResultID reports whether id == ResultID(threadID, callID), without
// allocating.
func IsResultID(id, threadID, callID string) bool {
	var stack [512]byte
	var out [64]byte
	buf := appendPart(appendPart(stack[:0], threadID), callID)
	return string(appendIDFrom(out[:0], "res_", buf)) == id
}

func completionID(threadID string, version int64, n int) string {
	var stack [256]byte
	var num [20]byte
	buf := appendPart(stack[:0], threadID)
	buf = appendPart(buf, string(strconv.AppendInt(num[:0], version, 10)))
	buf = appendPart(buf, string(strconv.AppendInt(num[:0], int64(n), 10)))
	return idFrom("cmpl_", buf)
}

func sliceID(threadID string, version int64, batchIDs []string) string {
	var stack [512]byte
	var num [20]byte
	buf := appendPart(stack[:0], threadID)
	buf = appendPart(buf, string(strconv.AppendInt(num[:0], version, 10)))
	for _, id := range batchIDs {
		buf = appendPart(buf, id)
	}
	return idFrom("slice_", buf)
}
