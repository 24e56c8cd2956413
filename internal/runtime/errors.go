package runtime

import (
	"errors"
	"fmt"
)

// ErrConflict reports that a commit's expected version did not match the
// stored one: another slice of the same thread committed first. The slice
// that gets it must not retry the commit; its messages are retried from the
// queue and deduplicated.
var ErrConflict = errors.New("history version conflict")

// ErrClosed reports that a thread is closed and takes no more messages.
var ErrClosed = errors.New("thread is closed")

// BadMessageError reports a message that can never be processed. It names the
// message and the field at fault so the dead-letter record is readable.
type BadMessageError struct {
	ID     string // the message ID, "" when it had none
	Field  string // the JSON field at fault, "" for the body as a whole
	Reason string
}

func (e *BadMessageError) Error() string {
	id := e.ID
	if id == "" {
		id = "(no id)"
	}
	if e.Field == "" {
		return fmt.Sprintf("bad message %s: %s", id, e.Reason)
	}
	return fmt.Sprintf("bad message %s: field %q: %s", id, e.Field, e.Reason)
}

// PermanentError wraps a failure that retrying cannot fix (a model that
// rejects the request, access denied). The engine ends the slice with an
// error reply instead of retrying.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as not worth retrying.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err (or anything it wraps) is a PermanentError
// or a BadMessageError.
func IsPermanent(err error) bool {
	var p *PermanentError
	var b *BadMessageError
	return errors.As(err, &p) || errors.As(err, &b)
}

// ToolRejectedError reports that a tool refused an invocation for good (a
// RAP server answering 4xx, arguments failing the schema, retries exhausted).
// The engine turns it into an error result the model can read.
//
// Its wording says what happened: Unreachable (the tool's server could not
// be reached at all, so the call never arrived) and ServerFailed (the
// server kept answering 5xx) are not refusals.
type ToolRejectedError struct {
	Tool   string
	Reason string
	// Unreachable: no connection to the tool's server (refused, timed out,
	// DNS), after the retries.
	Unreachable bool
	// ServerFailed: the tool's server answered every attempt with an
	// error of its own (5xx).
	ServerFailed bool
}

func (e *ToolRejectedError) Error() string {
	switch {
	case e.Unreachable:
		return fmt.Sprintf("tool %s is unreachable: %s", e.Tool, e.Reason)
	case e.ServerFailed:
		return fmt.Sprintf("tool %s failed: %s", e.Tool, e.Reason)
	}
	return fmt.Sprintf("tool %s rejected the call: %s", e.Tool, e.Reason)
}
