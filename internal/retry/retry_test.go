package retry

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

func TestCeilingSchedule(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		b    Backoff
		n    int
		want time.Duration
	}{
		{"first", Backoff{Base: 100 * ms, Max: 2 * time.Second}, 1, 100 * ms},
		{"second doubles", Backoff{Base: 100 * ms, Max: 2 * time.Second}, 2, 200 * ms},
		{"fifth", Backoff{Base: 100 * ms, Max: 2 * time.Second}, 5, 1600 * ms},
		{"capped", Backoff{Base: 100 * ms, Max: 2 * time.Second}, 6, 2 * time.Second},
		{"attempt 0 counts as 1", Backoff{Base: 100 * ms, Max: time.Second}, 0, 100 * ms},
		{"negative attempt counts as 1", Backoff{Base: 100 * ms, Max: time.Second}, -7, 100 * ms},
		{"attempt 64 capped", Backoff{Base: 100 * ms, Max: time.Second}, 64, time.Second},
		{"attempt 1000 capped", Backoff{Base: 100 * ms, Max: time.Second}, 1000, time.Second},
		{"attempt MaxInt capped", Backoff{Base: ms, Max: time.Minute}, math.MaxInt, time.Minute},
		{"no cap saturates", Backoff{Base: ms}, 1000, MaxWait},
		{"no cap, attempt 3", Backoff{Base: ms}, 3, 4 * ms},
		{"base above max", Backoff{Base: time.Hour, Max: time.Second}, 1, time.Second},
		{"zero base never waits", Backoff{Max: time.Second}, 10, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Ceiling(tc.n); got != tc.want {
				t.Fatalf("Ceiling(%d) = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
}

func TestDelayStaysInsideTheCeiling(t *testing.T) {
	for _, b := range []Backoff{
		{Base: time.Millisecond, Max: 50 * time.Millisecond},
		{Base: time.Millisecond, Max: 50 * time.Millisecond, Equal: true},
		{Base: time.Millisecond}, // no cap: attempt 1,000 must not overflow
		{Base: time.Millisecond, Equal: true},
	} {
		for _, n := range []int{1, 2, 3, 10, 63, 64, 65, 1000, math.MaxInt} {
			c := b.Ceiling(n)
			lo := time.Duration(0)
			if b.Equal {
				lo = c / 2
			}
			for range 50 {
				d := b.Delay(n)
				if d < lo || d > c {
					t.Fatalf("%+v: Delay(%d) = %v, want within [%v, %v]", b, n, d, lo, c)
				}
			}
		}
	}
}

func TestDelayUsesTheWholeRange(t *testing.T) {
	b := Backoff{Base: 10 * time.Second, Rand: func(n int64) int64 { return n }}
	if got := b.Delay(1); got != 10*time.Second {
		t.Fatalf("top draw: %v", got)
	}
	b.Rand = func(int64) int64 { return 0 }
	if got := b.Delay(1); got != 0 {
		t.Fatalf("bottom draw: %v", got)
	}
	b.Equal = true
	if got := b.Delay(1); got != 5*time.Second {
		t.Fatalf("bottom draw, equal jitter: %v", got)
	}
	b.Rand = func(int64) int64 { return -1 << 62 } // a misbehaving source is clamped
	if got := b.Delay(1); got != 5*time.Second {
		t.Fatalf("clamped draw: %v", got)
	}
}

func TestWaitRefusesToSleepPastTheDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b := Backoff{Base: 2 * time.Hour, Equal: true} // at least an hour
	err := b.Wait(ctx, 1)
	if !errors.Is(err, ErrPastDeadline) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want ErrPastDeadline", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Wait slept into the deadline")
	}
}

func TestWaitEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Backoff{Base: time.Hour, Equal: true}.Wait(ctx, 1) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return when its context was cancelled")
	}
}

func TestWaitZero(t *testing.T) {
	if err := (Backoff{}).Wait(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyDo(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		attempts int
		failures int   // tries that fail with boom
		final    error // what the try after them returns
		wantTry  int
		check    func(error) bool
	}{
		{"first try", 3, 0, nil, 1, func(err error) bool { return err == nil }},
		{"succeeds on the last try", 3, 2, nil, 3, func(err error) bool { return err == nil }},
		{"exhausted", 3, 10, nil, 3, func(err error) bool {
			var ex *ExhaustedError
			return errors.As(err, &ex) && ex.Attempts == 3 && errors.Is(err, boom)
		}},
		{"zero attempts is one", 0, 10, nil, 1, func(err error) bool {
			var ex *ExhaustedError
			return errors.As(err, &ex) && ex.Attempts == 1
		}},
		{"permanent stops", 5, 1, Permanent(errors.New("bad request")), 2, func(err error) bool {
			var ex *ExhaustedError
			return err != nil && !errors.As(err, &ex) && err.Error() == "bad request"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Backoff: Backoff{Base: time.Nanosecond, Max: time.Nanosecond}, Attempts: tc.attempts}
			tries := 0
			err := p.Do(context.Background(), func(n int) error {
				tries++
				if n != tries {
					t.Fatalf("attempt %d on try %d", n, tries)
				}
				if tries <= tc.failures {
					return boom
				}
				return tc.final
			})
			if tries != tc.wantTry || !tc.check(err) {
				t.Fatalf("tries %d (want %d), err %v", tries, tc.wantTry, err)
			}
		})
	}
}

func TestPolicyDoGivesUpBeforeTheDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	boom := errors.New("boom")
	p := Policy{Backoff: Backoff{Base: 4 * time.Hour, Equal: true}, Attempts: 5}
	tries := 0
	err := p.Do(ctx, func(int) error { tries++; return boom })
	if tries != 1 || !errors.Is(err, ErrPastDeadline) || !errors.Is(err, boom) {
		t.Fatalf("tries %d, err %v", tries, err)
	}
}

func TestPermanentNil(t *testing.T) {
	if Permanent(nil) != nil {
		t.Fatal("Permanent(nil) is not nil")
	}
}
