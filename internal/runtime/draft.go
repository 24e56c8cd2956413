package runtime

// The slice's draft is what it will commit next: the items past mark, the
// working state st, the children and the inputs. dirty says the draft
// holds something to commit; commit writes nothing while it is false. A
// change the draft must commit goes through one of the methods below (or
// appendItem, which calls changed), so that none can be forgotten:
// draft_test.go fails when a file sets dirty or appends to the outbox
// anywhere else, or when a method writes a field of the working state
// without marking the draft.

// changed marks the draft as holding something to commit. It is the one
// place dirty is set (commit clears it).
func (s *slice) changed() { s.dirty = true }

// addOutbox appends entries to the outbox, sent after the next commit,
// and marks the draft.
func (s *slice) addOutbox(es ...OutboxEntry) {
	s.st.Outbox = append(s.st.Outbox, es...)
	s.changed()
}

// dropOutbox empties the outbox (everything it held went out) and marks
// the draft.
func (s *slice) dropOutbox() {
	s.st.Outbox = nil
	s.changed()
}
