// Package retry is the one backoff schedule of agentslice: capped
// exponential backoff with jitter, an attempt limit, and deadline awareness.
// Every retry loop of the runtime (model attempts in internal/runtime, SQS
// batch entries in internal/sqsq, unprocessed DynamoDB keys in
// internal/dedup, optimistic-concurrency retries in internal/dsql, RAP
// POSTs in internal/rap) draws its waits from a Backoff.
//
// The schedule, for attempt n ≥ 1 (the wait after the n-th failed try,
// before try n+1):
//
//	ceiling(n) = min(Max, Base × 2^(n−1))   (Max = 0: no cap other than MaxWait)
//	wait(n)    = uniform in [0, ceiling(n)]           full jitter (default)
//	           = uniform in [ceiling(n)/2, ceiling(n)] with Equal set
//
// ceiling never overflows: the doubling stops at the cap (or at MaxWait,
// about 292 years, without one), so attempt 1,000 or math.MaxInt waits at
// most Max. n < 1 is treated as 1. Base ≤ 0 means no wait at all.
//
// Wait sleeps wait(n) on a timer, returns early with ctx's error when ctx
// ends, and — deadline awareness — does not start a wait that would end
// after ctx's deadline: it returns at once with an error that matches
// context.DeadlineExceeded (errors.Is), so a caller gives up with time left
// to report instead of sleeping into the deadline.
//
// Policy adds the attempt limit: Do calls a function until it succeeds,
// fails for good, runs out of attempts, or the wait before the next try is
// refused by Wait.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// MaxWait is the largest duration; ceilings without a Max stop here.
const MaxWait = time.Duration(1<<63 - 1)

// Backoff is a capped exponential schedule with jitter (see the package doc).
type Backoff struct {
	// Base is the ceiling of the first wait (after the first failed try).
	Base time.Duration
	// Max caps every ceiling; 0 means no cap.
	Max time.Duration
	// Equal draws waits from the upper half of the ceiling ("equal
	// jitter") instead of all of it ("full jitter"), for retries that must
	// not come back at once (optimistic-concurrency conflicts).
	Equal bool
	// Rand returns a uniform value in [0, n]; nil uses math/rand/v2. Tests
	// replace it to pin the draw.
	Rand func(n int64) int64
}

// Ceiling is the largest wait after attempt n (n < 1 counts as 1).
func (b Backoff) Ceiling(n int) time.Duration {
	if b.Base <= 0 {
		return 0
	}
	limit := b.Max
	if limit <= 0 {
		limit = MaxWait
	}
	if b.Base >= limit {
		return limit
	}
	d := b.Base
	for i := 1; i < n; i++ {
		if d > limit/2 {
			return limit
		}
		d *= 2
	}
	return d
}

// Delay draws the wait after attempt n.
func (b Backoff) Delay(n int) time.Duration {
	c := b.Ceiling(n)
	if c <= 0 {
		return 0
	}
	lo := time.Duration(0)
	if b.Equal {
		lo = c / 2
	}
	span := int64(c - lo)
	var r int64
	if b.Rand != nil {
		r = b.Rand(span)
	} else if span == 1<<63-1 {
		r = rand.Int64() // Int64N(span+1) would overflow
	} else {
		r = rand.Int64N(span + 1)
	}
	return lo + time.Duration(min(max(r, 0), span))
}

// ErrPastDeadline is matched (errors.Is) by the error Wait returns when the
// wait would end after the context's deadline. It wraps
// context.DeadlineExceeded.
var ErrPastDeadline = fmt.Errorf("retry: the next attempt would start after the deadline: %w", context.DeadlineExceeded)

// Wait sleeps the wait after attempt n, or returns early: ctx's error when
// ctx ends, an error matching ErrPastDeadline (and
// context.DeadlineExceeded) when the wait would outlast ctx's deadline.
func (b Backoff) Wait(ctx context.Context, n int) error {
	return Sleep(ctx, b.Delay(n))
}

// Sleep waits d, deadline-aware as Backoff.Wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return fmt.Errorf("waiting %v: %w", d, ErrPastDeadline)
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Policy is a Backoff with an attempt limit.
type Policy struct {
	Backoff
	// Attempts is the total number of tries, the first included (≥ 1; 0
	// means 1).
	Attempts int
}

// Permanent marks an error Do must not retry.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err}
}

type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// ExhaustedError is what Do returns when every attempt failed.
type ExhaustedError struct {
	Attempts int
	Last     error // the last attempt's error
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("retry: %d attempts failed, the last with: %v", e.Attempts, e.Last)
}

func (e *ExhaustedError) Unwrap() error { return e.Last }

// Do calls try (with the attempt number, from 1) until it returns nil or an
// error marked Permanent (returned as is; the mark is transparent), the attempts are
// used up (an *ExhaustedError), or Wait refuses the next wait (ctx ended or
// its deadline is too close: that error, joined with the last failure).
func (p Policy) Do(ctx context.Context, try func(attempt int) error) error {
	attempts := max(p.Attempts, 1)
	for n := 1; ; n++ {
		err := try(n)
		if err == nil {
			return nil
		}
		var perm *permanent
		if errors.As(err, &perm) {
			return err
		}
		if n >= attempts {
			return &ExhaustedError{Attempts: n, Last: err}
		}
		if werr := p.Wait(ctx, n); werr != nil {
			return errors.Join(fmt.Errorf("retry: giving up after attempt %d: %w", n, werr), err)
		}
	}
}
