package main

import (
	"context"
	"errors"
	"io"
)

// runServe is being built (issue 5, local agent server).
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
