package dsql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The OCC errors below are built by hand: PostgreSQL never reports OC000 or
// OC001, and the retry loop is a pure function of the errors it sees.

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		err      error
		retry    bool
		conflict ConflictReason
		tooLarge bool
	}{
		{"nil", nil, false, 0, false},
		{"plain", errors.New("connection reset"), false, 0, false},
		{"pg serialization", &pgconn.PgError{Code: "40001", Message: "could not serialize access due to concurrent update"}, true, 0, false},
		{"dsql data", &pgconn.PgError{Code: "40001", Message: "change conflicts with another transaction, please retry: (OC000)"}, true, 0, false},
		{"dsql schema", &pgconn.PgError{Code: "40001", Message: "schema has been updated by another transaction, please retry: (OC001)"}, true, 0, false},
		{"bare OC000", &pgconn.PgError{Code: "OC000"}, true, 0, false},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, true, 0, false},
		{"version", &pgconn.PgError{Code: "22P02", Message: `invalid input syntax for type bigint: "agentslice: version conflict: stored version 3"`}, false, ReasonVersion, false},
		{"other cast", &pgconn.PgError{Code: "22P02", Message: `invalid input syntax for type bigint: "x"`}, false, 0, false},
		{"exists", &pgconn.PgError{Code: "23505", Detail: "Key (id)=(k) already exists."}, false, ReasonExists, false},
		{"dsql size", &pgconn.PgError{Code: "54000", Message: "maximum row size exceeded"}, false, 0, true},
		{"wrapped", fmt.Errorf("ctx: %w", &pgconn.PgError{Code: "40001"}), true, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			retry, err := classify("t1", tc.err)
			if retry != tc.retry {
				t.Fatalf("retry = %v, want %v", retry, tc.retry)
			}
			var ce *ConflictError
			if got := errors.As(err, &ce); got != (tc.conflict != 0) || (got && (ce.Reason != tc.conflict || !errors.Is(err, runtime.ErrConflict))) {
				t.Fatalf("got %v, want conflict %v", err, tc.conflict)
			}
			if errors.Is(err, ErrTooLarge) != tc.tooLarge || (tc.tooLarge && !runtime.IsPermanent(err)) {
				t.Fatalf("got %v, want too large %v (permanent)", err, tc.tooLarge)
			}
			if tc.err != nil && err == nil {
				t.Fatal("error lost")
			}
		})
	}
	_, err := classify("t1", &pgconn.PgError{Code: "22P02", Message: `invalid input syntax for type bigint: "agentslice: version conflict: stored version 3"`})
	if ce := (*ConflictError)(nil); !errors.As(err, &ce) || ce.Detail != "stored version 3" {
		t.Fatalf("detail of %v", err)
	}
}

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	occ := &pgconn.PgError{Code: "40001", Message: "change conflicts with another transaction, please retry: (OC000)"}
	tests := []struct {
		name     string
		fails    int   // OCC failures before the outcome
		outcome  error // after the failures
		attempts int   // policy
		wantTry  int
		wantErr  string
	}{
		{"succeeds first", 0, nil, 5, 1, ""},
		{"succeeds after two", 2, nil, 5, 3, ""},
		{"version conflict is not retried", 1, &ConflictError{Reason: ReasonVersion}, 5, 2, "version mismatch"},
		{"other error is not retried", 0, errors.New("boom"), 5, 1, "boom"},
		{"gives up", 10, nil, 4, 4, "optimistic concurrency conflict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var delays []time.Duration
			p := RetryPolicy{Attempts: tc.attempts, BaseDelay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond,
				Sleep: func(_ context.Context, d time.Duration) error { delays = append(delays, d); return nil }}
			tries := 0
			err := p.run(context.Background(), "t1", func() (bool, error) {
				tries++
				if tries <= tc.fails {
					return classify("t1", occ)
				}
				return false, tc.outcome
			})
			if tries != tc.wantTry {
				t.Fatalf("%d tries, want %d", tries, tc.wantTry)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
			if len(delays) != tries-1 {
				t.Fatalf("%d waits for %d tries", len(delays), tries)
			}
			for i, d := range delays {
				full := min(10*time.Millisecond<<i, 40*time.Millisecond)
				if d < full/2 || d > full {
					t.Fatalf("wait %d is %v, want within [%v, %v]", i, d, full/2, full)
				}
			}
			if tc.name == "gives up" {
				var ce *ConflictError
				if !errors.As(err, &ce) || ce.Reason != ReasonOCC || ce.Attempts != 4 || !errors.Is(err, runtime.ErrConflict) || !errors.Is(err, occ) {
					t.Fatalf("got %#v", err)
				}
			}
		})
	}
}

func TestRetryStopsWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := RetryPolicy{} // the real timer-based sleep
	err := p.run(ctx, "t1", func() (bool, error) { return true, &pgconn.PgError{Code: "40001"} })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
