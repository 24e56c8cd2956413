package sqsq

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Router sends each message to the FIFO input queue of its thread's
// priority class (runtime.Message.Class; empty is interactive). Every
// message of one thread carries the same class, so all of a thread's
// messages go through one queue and its per-thread order holds. It
// implements runtime.Queue.
type Router struct {
	interactive, background *Queue
	lookup                  *classCache // nil: no lookup (WithClassLookup)
}

var _ runtime.Queue = (*Router)(nil)

// NewRouter returns a Router over the two classes' queues. A nil
// background queue sends everything to the interactive one (a deployment
// with a single input queue).
func NewRouter(interactive, background *Queue) (*Router, error) {
	if interactive == nil {
		return nil, errors.New("sqsq: NewRouter needs the interactive queue")
	}
	return &Router{interactive: interactive, background: background}, nil
}

// NewClassQueues builds the senders of the interactive queue cfg.URL and,
// when backgroundURL is not empty, of the background queue, and returns
// the Router over them.
func NewClassQueues(api API, cfg QueueConfig, backgroundURL string) (*Router, error) {
	in, err := NewQueue(api, cfg)
	if err != nil {
		return nil, err
	}
	var bg *Queue
	if backgroundURL != "" {
		bcfg := cfg
		bcfg.URL = backgroundURL
		if bg, err = NewQueue(api, bcfg); err != nil {
			return nil, fmt.Errorf("sqsq: the background queue: %w", err)
		}
	}
	return NewRouter(in, bg)
}

// QueueFor returns the queue a message of class c goes to.
func (r *Router) QueueFor(c runtime.Class) *Queue {
	if c.OrDefault() == runtime.ClassBackground && r.background != nil {
		return r.background
	}
	return r.interactive
}

// Send sends msgs, each to its class's queue, in order within each thread.
// Every message is checked before anything is sent, as Queue.Send does.
func (r *Router) Send(ctx context.Context, msgs ...runtime.Message) error {
	var in, bg []runtime.Message
	for _, m := range msgs {
		if !m.Class.Valid() {
			return runtime.Permanent(fmt.Errorf("sqsq: not sending message %s: unknown priority class %q", m.ID, m.Class))
		}
		class := m.Class
		if class == "" && r.lookup != nil && r.background != nil {
			c, err := r.lookup.class(ctx, m.ThreadID)
			if err != nil {
				return err
			}
			class = c
		}
		if r.QueueFor(class) == r.background {
			bg = append(bg, m)
		} else {
			in = append(in, m)
		}
	}
	for _, part := range [][]runtime.Message{in, bg} {
		for _, m := range part {
			if _, err := r.interactive.prepare(m); err != nil {
				return err
			}
		}
	}
	if len(in) > 0 {
		if err := r.interactive.Send(ctx, in...); err != nil {
			return err
		}
	}
	if len(bg) > 0 {
		return r.background.Send(ctx, bg...)
	}
	return nil
}
