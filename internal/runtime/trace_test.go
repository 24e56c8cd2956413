package runtime

import (
	"errors"
	"testing"
)

// A message's traceparent must be a W3C traceparent: a bad one is refused
// with an error naming the field, a good one (or none) passes.
func TestMessageTraceparentValidation(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tp string
		ok bool
	}{
		{"", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", false}, // version 00 has no more
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false},
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"not a traceparent", false},
	} {
		m := Message{V: 1, ID: "m1", ThreadID: "t1", Kind: KindUser, Text: "hi", Trace: c.tp}
		err := m.Validate()
		var bad *BadMessageError
		if c.ok != (err == nil) || (err != nil && (!errors.As(err, &bad) || bad.Field != "traceparent")) {
			t.Errorf("traceparent %q: %v, want ok=%v (else an error naming traceparent)", c.tp, err, c.ok)
		}
	}
}
