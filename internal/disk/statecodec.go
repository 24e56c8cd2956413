package disk

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentslice/agentslice/internal/runtime"
)

// The journal's thread states. Every commit carries its thread's whole
// state, and JSON was the largest cost of a commit's record (encoding a
// reply of a few hundred bytes in the outbox means escaping it): a commit
// record holds the state in this binary form instead, and replay turns it
// back into the JSON the database keeps. The parts that are rare on the hot
// path (deferred messages, outbox messages and cancellations) stay JSON
// inside it. A record written before this codec holds JSON, which starts
// with '{'; this form starts with stateCodecV1, stateCodecV2 or
// stateCodecV3 (V1 ends before ViewStart; V3 is V2 with Reach after
// ViewStart, written only when Reach is set, so that a state without it
// keeps its V2 bytes).
//
// TestStateCodecCoversEveryField fails when ThreadState gains a field the
// codec does not know, and round-trips a state with every field set.

const (
	stateCodecV1 = 1
	stateCodecV2 = 2
	stateCodecV3 = 3
)

// appendState appends st in the journal's form.
func appendState(b []byte, st *runtime.ThreadState) ([]byte, error) {
	if st.Reach != 0 {
		b = append(b, stateCodecV3)
	} else {
		b = append(b, stateCodecV2)
	}
	b = binary.AppendVarint(b, st.Version)
	b = putInt(b, st.Length)
	b = putString(b, st.Parent)
	b = putStrings(b, st.Stack)
	b = putString(b, st.SpawnCall)
	b = putBools(b, st.Closed, st.Temporary, st.Pending != nil, st.Compaction)
	if p := st.Pending; p != nil {
		var err error
		if b, err = putCall(b, p); err != nil {
			return nil, err
		}
	}
	b = putUvarint(b, uint64(len(st.Outbox)))
	for i := range st.Outbox {
		e := &st.Outbox[i]
		if e.Output != nil && e.Message == nil && e.Cancel == nil {
			b = append(b, 1)
			b = putOutput(b, e.Output)
			continue
		}
		js, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		b = append(b, 2)
		b = putBytes(b, js)
	}
	if len(st.Deferred) == 0 {
		b = putBytes(b, nil)
	} else {
		js, err := json.Marshal(st.Deferred)
		if err != nil {
			return nil, err
		}
		b = putBytes(b, js)
	}
	b = putUvarint(b, uint64(len(st.Subscriptions)))
	for _, s := range st.Subscriptions {
		b = putString(b, s.CallID)
		b = putString(b, s.Tool)
		b = putString(b, s.Args)
	}
	b = putInt(b, st.Tokens)
	b = putStrings(b, st.Children)
	b = putString(b, st.Compacting)
	b = putInt(b, st.Covers)
	b = putString(b, string(st.Class))
	b = putString(b, string(st.ParentClass))
	b = putString(b, st.Agent)
	b = putString(b, st.AgentHash)
	b = putUsage(b, &st.Usage)
	b = putString(b, st.Model)
	b = putString(b, st.Incarnation) // records written before it end after Model
	// Rare fields last, as JSON; a record written before them ends here.
	if st.ModelWait == nil {
		b = putBytes(b, nil)
	} else {
		js, err := json.Marshal(st.ModelWait)
		if err != nil {
			return nil, err
		}
		b = putBytes(b, js)
	}
	b = putInt(b, st.ViewStart) // V2 and V3 only
	if st.Reach != 0 {
		b = putInt(b, st.Reach) // V3 only
	}
	// The rare tail: budgets (budget.go), then forks and upgrade policies
	// (fork.go), then the open children (Limits.MaxChildren), then the
	// trace contexts of the pending call and of the subscriptions
	// (liveness checks). A V2 record without any of them ends here; one
	// with none of the later parts ends after the upgrade policy, one
	// without trace contexts after the open children (an empty list when
	// trace contexts follow), one whose subscriptions have none after the
	// pending call's.
	trace, subTraces := "", false
	if st.Pending != nil {
		trace = st.Pending.Trace
	}
	for _, sub := range st.Subscriptions {
		subTraces = subTraces || sub.Trace != ""
	}
	if st.Budget == nil && st.Fork == nil && st.Upgrade == "" && len(st.Open) == 0 && trace == "" && !subTraces {
		return b, nil
	}
	var budget, fork []byte
	var err error
	if st.Budget != nil {
		if budget, err = json.Marshal(st.Budget); err != nil {
			return nil, err
		}
	}
	if st.Fork != nil {
		if fork, err = json.Marshal(st.Fork); err != nil {
			return nil, err
		}
	}
	b = putString(putBytes(putBytes(b, budget), fork), st.Upgrade)
	if len(st.Open) == 0 && trace == "" && !subTraces {
		return b, nil
	}
	b = putStrings(b, st.Open)
	if trace == "" && !subTraces {
		return b, nil
	}
	b = putString(b, trace)
	if subTraces {
		b = putUvarint(b, uint64(len(st.Subscriptions)))
		for _, sub := range st.Subscriptions {
			b = putString(b, sub.Trace)
		}
	}
	return b, nil
}

// readState reads a state appendState wrote.
func readState(data []byte) (runtime.ThreadState, error) {
	var st runtime.ThreadState
	if len(data) == 0 || (data[0] != stateCodecV1 && data[0] != stateCodecV2 && data[0] != stateCodecV3) {
		return st, errors.New("not a journal state")
	}
	r := &reader{b: data[1:]}
	st.Version = int64(r.sint())
	st.Length = r.sint()
	st.Parent = r.string()
	st.Stack = r.strings()
	st.SpawnCall = r.string()
	var pending bool
	st.Closed, st.Temporary, pending, st.Compaction = r.bools4()
	if pending {
		st.Pending = r.call()
	}
	if n := r.count(); n > 0 {
		st.Outbox = make([]runtime.OutboxEntry, n)
		for i := range st.Outbox {
			switch kind := r.byte(); kind {
			case 1:
				st.Outbox[i].Output = r.output()
			case 2:
				if js := r.bytes(); r.err == nil {
					r.json(js, &st.Outbox[i])
				}
			default:
				r.fail(fmt.Errorf("outbox entry of kind %d", kind))
			}
		}
	}
	if js := r.bytes(); len(js) > 0 {
		r.json(js, &st.Deferred)
	}
	if n := r.count(); n > 0 {
		st.Subscriptions = make([]runtime.Subscription, n)
		for i := range st.Subscriptions {
			st.Subscriptions[i] = runtime.Subscription{CallID: r.string(), Tool: r.string(), Args: r.string()}
		}
	}
	st.Tokens = r.sint()
	st.Children = r.strings()
	st.Compacting = r.string()
	st.Covers = r.sint()
	st.Class = runtime.Class(r.string())
	st.ParentClass = runtime.Class(r.string())
	st.Agent = r.string()
	st.AgentHash = r.string()
	st.Usage = r.usage()
	st.Model = r.string()
	if len(r.b) > 0 {
		st.Incarnation = r.string()
	}
	if r.err == nil && len(r.b) != 0 {
		if js := r.bytes(); len(js) > 0 {
			st.ModelWait = new(runtime.ModelWait)
			r.json(js, st.ModelWait)
		}
	}
	v2 := data[0] >= stateCodecV2 // V3 is V2 with Reach
	if r.err == nil && v2 {
		st.ViewStart = r.sint()
	}
	if r.err == nil && data[0] == stateCodecV3 {
		if st.Reach = r.sint(); r.err == nil && st.Reach == 0 {
			r.err = errors.New("a V3 state with no reach")
		}
	}
	if r.err == nil && v2 && len(r.b) != 0 {
		if js := r.bytes(); len(js) > 0 {
			st.Budget = new(runtime.BudgetState)
			r.json(js, st.Budget)
		}
	}
	if r.err == nil && v2 && len(r.b) != 0 {
		if js := r.bytes(); len(js) > 0 {
			st.Fork = new(runtime.ForkPoint)
			r.json(js, st.Fork)
		}
		st.Upgrade = r.string()
	}
	if r.err == nil && v2 && len(r.b) != 0 {
		st.Open = r.strings()
		if r.err == nil && st.Open == nil && len(r.b) == 0 {
			r.err = errors.New("an empty list of open children ending the state")
		}
	}
	if r.err == nil && v2 && len(r.b) != 0 {
		r.traces(&st)
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d bytes after the state", len(r.b))
	}
	return st, r.err
}

// stateJSON returns a commit record's state as the database keeps it.
func stateJSON(data []byte) ([]byte, error) {
	if len(data) > 0 && data[0] == '{' {
		return data, nil // written before the codec
	}
	st, err := readState(data)
	if err != nil {
		return nil, err
	}
	return marshal(&st)
}

func putInt(b []byte, v int) []byte { return binary.AppendVarint(b, int64(v)) }

// sint reads a putInt.
func (r *reader) sint() int { return int(readVarint(r, binary.Varint)) }

func putStrings(b []byte, ss []string) []byte {
	b = putUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = putString(b, s)
	}
	return b
}

func putBools(b []byte, v ...bool) []byte {
	var f byte
	for i, x := range v {
		if x {
			f |= 1 << i
		}
	}
	return append(b, f)
}

func putCall(b []byte, p *runtime.PendingCall) ([]byte, error) {
	b = putString(b, p.ID)
	b = putString(b, p.Name)
	b = putString(b, p.Args)
	b = putBools(b, p.Dispatched)
	t, err := p.Deadline.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("call %s: deadline: %w", p.ID, err)
	}
	return putBytes(b, t), nil
}

func putOutput(b []byte, o *runtime.OutputEvent) []byte {
	b = putString(b, o.ID)
	b = putString(b, o.ThreadID)
	b = putString(b, o.Kind)
	b = putString(b, o.Text)
	b = putString(b, o.Agent)
	b = putBools(b, o.Usage != nil)
	if o.Usage != nil {
		b = putUsage(b, o.Usage)
	}
	return b
}

func putUsage(b []byte, u *runtime.Usage) []byte {
	for _, v := range [...]int{u.Input, u.Output, u.Cached, u.CacheWrite, u.Total} {
		b = putInt(b, v)
	}
	return b
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.err = errors.New("state cut short")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) bools4() (a, b, c, d bool) {
	f := r.byte()
	return f&1 != 0, f&2 != 0, f&4 != 0, f&8 != 0
}

// count reads the length of a list whose elements take a byte or more each,
// refusing one longer than what is left (damage must not allocate).
func (r *reader) count() int {
	n := r.int()
	if r.err == nil && n > len(r.b) {
		r.fail(fmt.Errorf("%d elements in %d bytes", n, len(r.b)))
	}
	if r.err != nil {
		return 0
	}
	return n
}

func (r *reader) strings() []string {
	n := r.count()
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.string()
	}
	return ss
}

// traces reads the tail's trace contexts (appendState): the pending
// call's, then, if any has one, the subscriptions'. What appendState
// would not write (an empty tail, a trace without its record) is refused.
func (r *reader) traces(st *runtime.ThreadState) {
	trace := r.string()
	switch {
	case r.err != nil:
		return
	case trace != "" && st.Pending == nil:
		r.fail(errors.New("a pending call's trace context without a pending call"))
		return
	case trace != "":
		st.Pending.Trace = trace
	}
	if len(r.b) == 0 {
		if trace == "" {
			r.fail(errors.New("an empty trace context list"))
		}
		return
	}
	if n := r.count(); r.err == nil && n != len(st.Subscriptions) {
		r.fail(fmt.Errorf("%d subscription trace contexts for %d subscriptions", n, len(st.Subscriptions)))
		return
	}
	some := false
	for i := range st.Subscriptions {
		st.Subscriptions[i].Trace = r.string()
		some = some || st.Subscriptions[i].Trace != ""
	}
	if r.err == nil && !some {
		r.fail(errors.New("subscription trace contexts, all empty"))
	}
}

func (r *reader) call() *runtime.PendingCall {
	p := &runtime.PendingCall{ID: r.string(), Name: r.string(), Args: r.string()}
	p.Dispatched = r.byte()&1 != 0
	if t := r.bytes(); r.err == nil {
		if err := p.Deadline.UnmarshalBinary(t); err != nil {
			r.fail(fmt.Errorf("call %s: deadline: %w", p.ID, err))
		}
	}
	return p
}

func (r *reader) output() *runtime.OutputEvent {
	o := &runtime.OutputEvent{ID: r.string(), ThreadID: r.string(), Kind: r.string(), Text: r.string(), Agent: r.string()}
	if r.byte()&1 != 0 {
		u := r.usage()
		o.Usage = &u
	}
	return o
}

func (r *reader) usage() runtime.Usage {
	return runtime.Usage{Input: r.sint(), Output: r.sint(), Cached: r.sint(), CacheWrite: r.sint(), Total: r.sint()}
}

func (r *reader) json(js []byte, v any) {
	if err := json.Unmarshal(js, v); err != nil {
		r.fail(err)
	}
}
