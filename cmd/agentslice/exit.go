package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"

	"github.com/agentslice/agentslice/client"
)

// Exit codes of every command (docs/terminal.md lists them). An answer of the
// API maps by its status; everything else is generic.
const (
	ExitOK          = 0
	ExitFailure     = 1 // anything else: a server error (5xx), a failed check, a crash of what ran
	ExitUsage       = 2 // bad flags or arguments: nothing was sent
	ExitNotFound    = 3 // 404: the thread (sandbox, dead letter...) does not exist
	ExitConflict    = 4 // 409: the thread's state refuses it (closed, another agent, no choice waiting, nothing to apply...)
	ExitRefused     = 5 // 400, 413, 422: the server refused the request as invalid, naming the field
	ExitUnavailable = 6 // the server cannot be reached, or answers 502/503/504
	ExitAuth        = 7 // 401, 403: the token is missing or wrong
)

// exitError carries the exit code a command's error ends with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usagef is a usage error (exit 2): bad flags or arguments.
func usagef(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// conflictf is an error of a thread's state found by the command line
// itself, as a 409 would be (exit 4).
func conflictf(format string, args ...any) error {
	return &exitError{code: ExitConflict, err: fmt.Errorf(format, args...)}
}

// exitCode maps a command's error to its exit code.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ae *client.APIError
	if errors.As(err, &ae) {
		switch ae.StatusCode {
		case http.StatusNotFound:
			return ExitNotFound
		case http.StatusConflict:
			return ExitConflict
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
			return ExitRefused
		case http.StatusUnauthorized, http.StatusForbidden:
			return ExitAuth
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return ExitUnavailable
		}
		return ExitFailure
	}
	var oe *net.OpError
	if errors.As(err, &oe) || errors.Is(err, syscall.ECONNREFUSED) {
		return ExitUnavailable
	}
	return ExitFailure
}
