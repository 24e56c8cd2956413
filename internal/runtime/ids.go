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
		buf = strconv.AppendInt(buf, int64(len(p)), 10)
		buf = append(buf, ':')
		buf = append(buf, p...)
	}
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
	return DeriveID("call_", threadID, strconv.Itoa(pos))
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
	return DeriveID("cmpl_", threadID, strconv.FormatInt(version, 10), strconv.Itoa(n))
}

func sliceID(threadID string, version int64, batch []Message) string {
	parts := make([]string, 0, len(batch)+2)
	parts = append(parts, threadID, strconv.FormatInt(version, 10))
	for _, m := range batch {
		parts = append(parts, m.ID)
	}
	return DeriveID("slice_", parts...)
}
