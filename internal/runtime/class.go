package runtime

import "fmt"

// Class is a thread's priority class. It is fixed when the thread is
// created and recorded in its state (ThreadState.Class); it decides which
// thread runs next, never the order of one thread's messages.
//
// Every message carries the class of the thread it is addressed to
// (Message.Class), so a queue can route it without reading the thread:
// the engine stamps what it sends, and callers outside the runtime stamp
// what they know (a user's message: interactive unless asked otherwise).
// The empty class means interactive.
type Class string

// The priority classes.
const (
	// ClassInteractive is a thread a person is waiting on: threads users
	// create and the children they spawn for that conversation.
	ClassInteractive Class = "interactive"
	// ClassBackground is work nobody is waiting on right now: the
	// temporary threads that handle subscription events and the threads
	// events (rather than people) create.
	ClassBackground Class = "background"
)

// Classes lists the classes, most urgent first.
var Classes = [...]Class{ClassInteractive, ClassBackground}

// OrDefault returns c, or ClassInteractive when c is empty.
func (c Class) OrDefault() Class {
	if c == "" {
		return ClassInteractive
	}
	return c
}

// Valid reports whether c is empty or one of the known classes.
func (c Class) Valid() bool {
	return c == "" || c == ClassInteractive || c == ClassBackground
}

// ParseClass returns the class named s ("" gives interactive) or an error
// naming the classes there are.
func ParseClass(s string) (Class, error) {
	c := Class(s)
	if !c.Valid() {
		return "", fmt.Errorf("unknown priority class %q (want %q or %q)", s, ClassInteractive, ClassBackground)
	}
	return c.OrDefault(), nil
}

// childClass is the class of a child created by a thread of class parent:
// a temporary child handling a subscription event is background; a
// compaction child works for its parent and a spawned child for its
// parent's conversation, so both inherit the parent's class.
func childClass(parent Class, st ThreadState) Class {
	if st.Temporary && !st.Compaction {
		return ClassBackground
	}
	return parent.OrDefault()
}

// batchClass is the class a new thread gets from the first message that
// names one (named reports true), interactive when none does (its agent's
// Priority may then set it; see applyAgent).
func batchClass(batch []Message) (c Class, named bool) {
	for _, m := range batch {
		if m.Class != "" {
			return m.Class, true
		}
	}
	return ClassInteractive, false
}
