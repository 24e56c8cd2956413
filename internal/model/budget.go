package model

import (
	"math"
	"time"
)

// Completion time budget: how long one completion may stream in the worst
// case, which the AWS stack turns into the slice function's timeout.
const (
	// DefaultMinOutputTokensPerSecond is the streaming rate planned for
	// when a catalog entry gives none: slow on purpose (a loaded model,
	// a long reasoning phase), so that a default deployment does not
	// dead-letter long answers.
	DefaultMinOutputTokensPerSecond = 15.0
	// FirstTokenAllowance is the time to the first token planned on top of
	// the streaming time (queueing at the provider, a long prompt).
	FirstTokenAllowance = 15 * time.Second
)

// WorstCaseCompletion is the longest one completion of c is planned to take:
// FirstTokenAllowance plus MaxOutputTokens at MinOutputTokensPerSecond
// (or the default rate), rounded up to a whole second.
func (c *Config) WorstCaseCompletion() time.Duration {
	rate := c.MinOutputTokensPerSecond
	if rate <= 0 {
		rate = DefaultMinOutputTokensPerSecond
	}
	secs := math.Ceil(float64(c.MaxOutputTokens) / rate)
	if secs > float64(math.MaxInt64/int64(time.Second))/2 {
		secs = float64(math.MaxInt64/int64(time.Second)) / 2
	}
	return FirstTokenAllowance + time.Duration(secs)*time.Second
}
