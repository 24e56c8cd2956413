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
	sum := sha256.Sum256(buf)
	var out [64]byte
	n := copy(out[:], prefix)
	if n < len(prefix) {
		return prefix + idEncoding.EncodeToString(sum[:16])
	}
	idEncoding.Encode(out[n:], sum[:16])
	return string(out[:n+idEncoding.EncodedLen(16)])
}

// callID is the ID of the tool call recorded at position pos of a thread's
// own history. Positions are stable because history is append-only and
// commits are version-checked.
func callID(threadID string, pos int) string {
	if chaosmutant == MutantRandomCallID {
		return DeriveID("call_", threadID, strconv.Itoa(pos), strconv.FormatUint(rand.Uint64(), 36))
	}
	var stack [256]byte
	var num [20]byte
	buf := appendPart(stack[:0], threadID)
	buf = appendPart(buf, string(strconv.AppendInt(num[:0], int64(pos), 10)))
	return idFrom("call_", buf)
}

// CallIDAt is the ID the engine gives a model's tool call recorded at
// position pos of a thread's own history. Stores may use it to avoid
// storing IDs they can derive.
func CallIDAt(threadID string, pos int) string { return callID(threadID, pos) }

// ResultID is the message ID tools built on this runtime give the result of
// a call (the RAP receiver and the kit use it), so a tool that posts its
// result twice is deduplicated.
func ResultID(threadID, callID string) string { return DeriveID("res_", threadID, callID) }

func completionID(threadID string, version int64, n int) string {
	var stack [256]byte
	var num [20]byte
	buf := appendPart(stack[:0], threadID)
	buf = appendPart(buf, string(strconv.AppendInt(num[:0], version, 10)))
	buf = appendPart(buf, string(strconv.AppendInt(num[:0], int64(n), 10)))
	return idFrom("cmpl_", buf)
}

func sliceID(threadID string, version int64, batch []Message) string {
	var stack [512]byte
	var num [20]byte
	buf := appendPart(stack[:0], threadID)
	buf = appendPart(buf, string(strconv.AppendInt(num[:0], version, 10)))
	for i := range batch {
		buf = appendPart(buf, batch[i].ID)
	}
	return idFrom("slice_", buf)
}
