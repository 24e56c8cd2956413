package main

import (
	"context"
	"errors"
	"io"
)

// runSend, runTail and runMigrate are being built (issue 7, deployment CLI).
func runSend(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}

func runTail(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
