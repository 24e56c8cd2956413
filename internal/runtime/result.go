package runtime

import "time"

// What a slice reports (SliceResult), and the slice ID it derives on demand.

// Rejection is a message the slice refused, with the reason.
type Rejection struct {
	ID  string
	Err error
}

// SliceResult says what a slice did.
type SliceResult struct {
	Processed   []string // consumed into history or state
	Duplicates  []string // already processed before
	Dropped     []string // consumed without effect (thread closed)
	Rejected    []Rejection
	Completions int
	Dispatched  string // the tool call ID dispatched, if any
	Continued   bool   // a continuation was enqueued
	// ModelErr is set when the model failed permanently; the slice ended
	// with an error reply and must not be retried.
	ModelErr error
	// Agent is the agent the slice ran as ("" without agents) and Usage
	// the tokens its completions used (for per-agent metrics).
	Agent string
	Usage Usage
	// Time accounting of the slice (the durations history keeps, see
	// Item.Took), for per-agent and per-tool metrics: Generating is its
	// completions' time; Queued the longest a message of its batch waited
	// from its arrival to the slice; Tool and ToolLatency, when the slice
	// consumed a pending call's result, the call's tool and the time from
	// the call's commit to the result's arrival.
	Generating  time.Duration
	Queued      time.Duration
	Tool        string
	ToolLatency time.Duration

	// What ID derives the slice's ID from, kept until it is asked for:
	// the thread, its version when loaded (-1: nothing loaded) and the
	// batch's message IDs (the strings, not the caller's messages).
	id       string
	idSet    bool
	thread   string
	version  int64
	batch    []string // in batchBuf unless the batch has more than two
	batchBuf [2]string
}

// ID is the slice's ID: derived from the thread, its version and the
// messages of the batch, so that a slice retried has the ID it had. It is
// derived when first asked for (a SHA-256 and an allocation per slice were
// 4% of a simple completion's CPU, and the embedded system never asks);
// the result is not safe for concurrent use before that.
func (r *SliceResult) ID() string {
	if !r.idSet && r.thread != "" {
		r.id, r.idSet = sliceID(r.thread, r.version, r.batch), true
	}
	return r.id
}

// SetID sets the ID of a result made outside the engine (test doubles).
func (r *SliceResult) SetID(id string) { r.id, r.idSet = id, true }

// derive records what the slice's ID derives from.
func (r *SliceResult) derive(thread string, version int64, batch []Message) {
	r.thread, r.version, r.idSet = thread, version, false
	r.batch = r.batchBuf[:0]
	for i := range batch {
		r.batch = append(r.batch, batch[i].ID)
	}
}
