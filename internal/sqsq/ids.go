package sqsq

import (
	"github.com/agentslice/agentslice/internal/runtime"
)

// MaxSQSIDLen is the longest MessageGroupId or MessageDeduplicationId SQS
// accepts.
const MaxSQSIDLen = 128

// sqsIDOK reports whether SQS accepts s as a message group or deduplication
// ID: 1 to 128 characters, each an ASCII letter, digit or punctuation
// character (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~).
func sqsIDOK(s string) bool {
	if len(s) == 0 || len(s) > MaxSQSIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// GroupID returns the MessageGroupId of a thread: the thread ID when SQS
// accepts it, else "g_" followed by a hash of it. Thread IDs the runtime
// mints are always accepted as they are.
func GroupID(threadID string) string {
	if sqsIDOK(threadID) {
		return threadID
	}
	return runtime.DeriveID("g_", threadID)
}

// DedupID returns the MessageDeduplicationId of a message: the same pair
// gives the same ID on every send (by the engine, the delay relay or
// EventBridge Scheduler), and different pairs give different IDs, whatever
// the queue's DeduplicationScope.
//
// It is "threadID:messageID" when that is at most 128 characters of what SQS
// accepts and thread IDs cannot make it ambiguous (the thread ID contains no
// ':'), else "d_" followed by a hash of the pair.
func DedupID(threadID, messageID string) string {
	if s := threadID + ":" + messageID; sqsIDOK(s) && !containsColon(threadID) {
		return s
	}
	return runtime.DeriveID("d_", threadID, messageID)
}

func containsColon(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return true
		}
	}
	return false
}
