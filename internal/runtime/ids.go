package runtime

import (
	"crypto/sha256"
	"encoding/base32"
	"math/rand/v2"
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
// own history. Positions are stable because history is append-only and
// commits are version-checked.
func callID(threadID string, pos int) string {
	if chaosmutant == MutantRandomCallID {
		return DeriveID("call_", threadID, strconv.Itoa(pos), strconv.FormatUint(rand.Uint64(), 36))
	}
	var stack [256]byte
	return idFrom("call_", callIDInput(stack[:0], threadID, pos))
}

// callIDInput appends the parts callID derives its ID from.
func callIDInput(buf []byte, threadID string, pos int) []byte {
	var num [20]byte
	buf = appendPart(buf, threadID)
	return appendPart(buf, string(strconv.AppendInt(num[:0], int64(pos), 10)))
}

// CallIDAt is the ID the engine gives a model's tool call recorded at
// position pos of a thread's own history. Stores may use it to avoid
// storing IDs they can derive.
func CallIDAt(threadID string, pos int) string { return callID(threadID, pos) }

// IsCallIDAt reports whether id == CallIDAt(threadID, pos), without
// allocating (stores check every call they encode).
func IsCallIDAt(id, threadID string, pos int) bool {
	if chaosmutant == MutantRandomCallID {
		return id == CallIDAt(threadID, pos)
	}
	var stack [256]byte
	var out [64]byte
	return string(appendIDFrom(out[:0], "call_", callIDInput(stack[:0], threadID, pos))) == id
}

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
