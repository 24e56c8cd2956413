package dsql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentslice/agentslice/internal/retry"
	"github.com/agentslice/agentslice/internal/runtime"
)

// ConflictReason says why a commit lost.
type ConflictReason int

// The conflict reasons.
const (
	// ReasonVersion: the stored version is not the expected one (or the
	// thread does not exist although a version > 0 was expected).
	ReasonVersion ConflictReason = iota + 1
	// ReasonExists: a row the commit creates already exists: a child
	// thread, or a first commit that raced another.
	ReasonExists
	// ReasonOCC: optimistic concurrency conflicts (SQLSTATE 40001, OC000,
	// OC001) persisted through every retry.
	ReasonOCC
)

func (r ConflictReason) String() string {
	switch r {
	case ReasonVersion:
		return "version mismatch"
	case ReasonExists:
		return "row already exists"
	case ReasonOCC:
		return "optimistic concurrency conflict"
	}
	return fmt.Sprintf("ConflictReason(%d)", int(r))
}

// ConflictError reports a commit that lost to another writer; nothing of it
// was applied. errors.Is(err, runtime.ErrConflict) holds for every reason.
type ConflictError struct {
	ThreadID string
	Reason   ConflictReason
	// Detail is what the database said, e.g. "stored version 3" or
	// "Key (id)=(t1-kid) already exists.".
	Detail string
	// Attempts is how many times the transaction was tried.
	Attempts int
	// Err is the database error behind the conflict.
	Err error
}

func (e *ConflictError) Error() string {
	s := e.Reason.String()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s + ": " + runtime.ErrConflict.Error()
}

// Is makes errors.Is(err, runtime.ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == runtime.ErrConflict }

// Unwrap returns the database error.
func (e *ConflictError) Unwrap() error { return e.Err }

// ErrTooLarge is matched (errors.Is) by every *TooLargeError.
var ErrTooLarge = errors.New("dsql: write exceeds a DSQL limit")

// TooLargeError reports a commit that DSQL would refuse for its size. It is
// returned wrapped in runtime.Permanent: retrying cannot help.
type TooLargeError struct {
	ThreadID string
	What     string // "rows", "bytes", "state", or "database" for a limit the server enforced
	Size     int
	Limit    int
	Detail   string
}

func (e *TooLargeError) Error() string {
	if e.What == "database" {
		return fmt.Sprintf("dsql: thread %s: the database refused the commit for its size: %s", e.ThreadID, e.Detail)
	}
	return fmt.Sprintf("dsql: thread %s: commit would write %d %s, more than the limit of %d%s", e.ThreadID, e.Size, e.What, e.Limit, e.Detail)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// ErrLoadTooLarge is matched (errors.Is) by every *LoadTooLargeError.
var ErrLoadTooLarge = errors.New("dsql: a thread's view is too large to load in one query")

// LoadTooLargeError reports a thread whose view one load cannot read: more
// than Limits.MaxLoadBytes (Loaded is how far the load got), or refused by
// the database for its size (Detail is what it said; DSQL bounds the
// memory of one query). It is returned wrapped in runtime.Permanent: the
// thread loads again only once it is smaller (compacted) or loaded in
// pages.
type LoadTooLargeError struct {
	ThreadID string
	Loaded   int
	Limit    int
	Detail   string
}

func (e *LoadTooLargeError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("dsql: thread %s: the database refused to load its view for its size: %s", e.ThreadID, e.Detail)
	}
	return fmt.Sprintf("dsql: thread %s: its view is over %d bytes, more than one load may read (Limits.MaxLoadBytes %d)",
		e.ThreadID, e.Loaded, e.Limit)
}

// Is makes errors.Is(err, ErrLoadTooLarge) true.
func (e *LoadTooLargeError) Is(target error) bool { return target == ErrLoadTooLarge }

// classifyLoad turns a database error of the load query into a
// *LoadTooLargeError when the server refused it for its size: SQLSTATE
// 53200 (out_of_memory) or 54000 (program_limit_exceeded, which DSQL
// raises for its size limits).
func classifyLoad(threadID string, err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && (pg.Code == "53200" || pg.Code == "54000") {
		return runtime.Permanent(&LoadTooLargeError{ThreadID: threadID, Detail: pg.Code + " " + pg.Message})
	}
	return err
}

// Markers in the errors that the commit statements raise on purpose (see
// updateThreadSQL and guardSQL). They travel in a PostgreSQL
// invalid_text_representation error (22P02).
const (
	conflictMarker = "agentslice: version conflict"
	lengthMarker   = "agentslice: length mismatch"
)

// classify turns a database error from a commit into the package's error
// kinds. retry reports an OCC failure: the transaction may succeed if run
// again.
func classify(threadID string, err error) (retry bool, out error) {
	if err == nil {
		return false, nil
	}
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return false, err
	}
	switch {
	case isOCC(pg):
		return true, err
	case pg.Code == "22P02" && strings.Contains(pg.Message, conflictMarker):
		return false, &ConflictError{ThreadID: threadID, Reason: ReasonVersion, Detail: markerDetail(pg.Message, conflictMarker), Err: err}
	case pg.Code == "22P02" && strings.Contains(pg.Message, lengthMarker):
		return false, fmt.Errorf("dsql: thread %s: commit State.Length disagrees with the stored length (%s): %w",
			threadID, markerDetail(pg.Message, lengthMarker), err)
	case pg.Code == "23505": // unique_violation
		return false, &ConflictError{ThreadID: threadID, Reason: ReasonExists, Detail: pg.Detail, Err: err}
	case pg.Code == "54000": // program_limit_exceeded: DSQL row, column and transaction size limits
		return false, runtime.Permanent(&TooLargeError{ThreadID: threadID, What: "database", Detail: pg.Message})
	}
	return false, err
}

// markerDetail extracts what follows the marker in a cast error message:
// `invalid input syntax for type bigint: "agentslice: version conflict: stored version 3"`.
func markerDetail(msg, marker string) string {
	i := strings.Index(msg, marker)
	if i < 0 {
		return ""
	}
	s := strings.TrimPrefix(msg[i+len(marker):], ": ")
	return strings.TrimSuffix(s, `"`)
}

// isOCC reports an optimistic-concurrency failure: the transaction may
// succeed if run again. DSQL reports OC000 (data changed) and OC001 (schema
// changed) under SQLSTATE 40001, with the code in the message; PostgreSQL
// reports 40001 at REPEATABLE READ and 40P01 for a deadlock.
func isOCC(pg *pgconn.PgError) bool {
	switch pg.Code {
	case "40001", "40P01", "OC000", "OC001":
		return true
	}
	return strings.Contains(pg.Message, "(OC000)") || strings.Contains(pg.Message, "(OC001)")
}

// RetryPolicy bounds the retries of a transaction that failed an optimistic
// concurrency check.
type RetryPolicy struct {
	// Attempts is the total number of tries (default 5).
	Attempts int
	// BaseDelay is the backoff before the second try; it doubles each time
	// up to MaxDelay, and the actual wait is drawn at random between half of
	// it and all of it (defaults 5ms and 200ms).
	BaseDelay, MaxDelay time.Duration
	// Sleep waits d or until ctx ends. Nil uses a timer; tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 5
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 5 * time.Millisecond
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = max(200*time.Millisecond, p.BaseDelay)
	}
	if p.Sleep == nil {
		p.Sleep = retry.Sleep
	}
	return p
}

// backoff is the wait before try number attempt+1 (attempt >= 1): equal
// jitter, so that a conflicting writer does not come back at once.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	return retry.Backoff{Base: p.BaseDelay, Max: p.MaxDelay, Equal: true}.Delay(attempt)
}

// run calls try until it succeeds, fails for a reason other than OCC, or
// the attempts are used up; then OCC failures become a *ConflictError with
// Reason ReasonOCC. try returns whether its failure was OCC, and the error.
func (p RetryPolicy) run(ctx context.Context, threadID string, try func() (retry bool, err error)) error {
	p = p.withDefaults()
	for attempt := 1; ; attempt++ {
		occ, err := try()
		if !occ {
			var ce *ConflictError
			if errors.As(err, &ce) {
				ce.Attempts = attempt
			}
			return err
		}
		if attempt >= p.Attempts {
			detail := ""
			var pg *pgconn.PgError
			if errors.As(err, &pg) {
				detail = pg.Code + " " + pg.Message
			}
			return &ConflictError{ThreadID: threadID, Reason: ReasonOCC, Detail: detail, Attempts: attempt, Err: err}
		}
		if serr := p.Sleep(ctx, p.backoff(attempt)); serr != nil {
			return fmt.Errorf("dsql: waiting to retry after %v: %w", err, serr)
		}
	}
}
