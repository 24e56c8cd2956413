package serverless

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// SliceRunner runs one slice; *runtime.Engine is one.
type SliceRunner interface {
	RunSlice(ctx context.Context, in runtime.SliceInput) (*runtime.SliceResult, error)
}

// Slice outcomes, as logged and as the Outcome dimension of the metrics.
const (
	OutcomeOK         = "ok"          // the slice committed (or had nothing to do)
	OutcomeDuplicate  = "duplicate"   // every message had been processed before
	OutcomeModelError = "model_error" // the model failed for good; an error reply went out
	OutcomeRetry      = "retry"       // the slice failed; its records were reported for redelivery
)

// Handler handles SQS FIFO batches of the input queue (see the package doc
// for the rules). Slices and DeadLetters are required.
type Handler struct {
	Slices      SliceRunner
	DeadLetters DeadLetterer
	Logger      *slog.Logger      // default slog.Default()
	Metrics     *lambdafn.Metrics // optional
	// Margin is kept free before the invocation deadline. Default
	// DefaultMargin.
	Margin time.Duration
	// Parallel caps the groups of one batch that run at once. Default 10,
	// the largest FIFO batch.
	Parallel int
	// Notices are the background notifications slices start
	// (cancel_tool_call, close_thread: *rap.Dispatcher). Handle waits for
	// them, at most NoticeWait, before it returns: Lambda freezes the
	// environment when the handler returns, and a notification still
	// running would stall until the next invocation or be lost. Optional.
	Notices Waiter
	// NoticeWait bounds that wait. Default DefaultNoticeWait. The wait
	// also ends at the slices' deadline (the invocation's minus Margin).
	NoticeWait time.Duration
	// Settle, when set, settles each group's records as soon as the group
	// is done, while other groups still run: the records that succeeded
	// are deleted, the failed ones hidden for a short growing delay
	// instead of the queue's visibility timeout (*QueueSettler). Optional:
	// without it the event source mapping deletes the batch when the
	// invocation ends and failed records wait out the visibility timeout.
	Settle Settler
	// Flusher, when set, exports the spans of the batch before Handle
	// returns (Lambda freezes the environment then, and a batching span
	// processor would hold them until the next invocation, or lose them):
	// bounded by half the margin past the slices' deadline, so the other
	// half stays free for the reply to Lambda (*otelx.Tracing).
	Flusher Flusher
	Now     func() time.Time // default time.Now
}

// Waiter waits for background work to end, or for ctx to end.
type Waiter interface {
	Wait(ctx context.Context) error
}

// DefaultNoticeWait is the default bound of Handler.NoticeWait: the
// rap.Dispatcher's default timeout of one notification.
const DefaultNoticeWait = 5 * time.Second

// entry is one decoded record.
type entry struct {
	rec events.SQSMessage
	msg runtime.Message
}

// Handle processes one batch and reports the records to retry. It never
// returns an error: a failure is reported per record, so that records that
// did succeed are not delivered again.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	sliceCtx := ctx
	if dl, ok := ctx.Deadline(); ok {
		margin := h.Margin
		if margin <= 0 {
			margin = DefaultMargin
		}
		var cancel context.CancelFunc
		sliceCtx, cancel = context.WithDeadline(ctx, dl.Add(-margin))
		defer cancel()
	}
	groups := groupRecords(ev.Records)
	failed := make([][]string, len(groups))
	parallel := h.Parallel
	if parallel <= 0 {
		parallel = 10
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, g := range groups {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			failed[i] = h.group(ctx, sliceCtx, g)
			h.settle(ctx, g, failed[i])
		}()
	}
	wg.Wait()
	h.waitNotices(ctx, sliceCtx)
	h.flush(ctx)
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, ids := range failed {
		for _, id := range ids {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
	}
	return resp, nil
}

// Flusher exports what was buffered, within ctx's deadline.
type Flusher interface {
	Flush(ctx context.Context) error
}

// flush exports the batch's spans (Handler.Flusher): until half the
// margin before the invocation deadline, or FlushTimeout without one.
func (h *Handler) flush(ctx context.Context) {
	if h.Flusher == nil {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, FlushTimeout)
	if dl, ok := ctx.Deadline(); ok {
		margin := h.Margin
		if margin <= 0 {
			margin = DefaultMargin
		}
		cancel()
		fctx, cancel = context.WithDeadline(ctx, dl.Add(-margin/2))
	}
	defer cancel()
	if err := h.Flusher.Flush(fctx); err != nil {
		h.logger().WarnContext(ctx, "exporting the batch's spans", "error", err.Error())
	}
}

// FlushTimeout bounds Handler.Flusher's flush of an invocation without a
// deadline (tests; a Lambda invocation always has one).
const FlushTimeout = 2 * time.Second

// waitNotices waits (bounded) for the notifications the slices started:
// NoticeWait at most, and never past the slices' deadline (sliceCtx), so
// the margin before the invocation deadline stays free for the reply to
// Lambda.
func (h *Handler) waitNotices(ctx, sliceCtx context.Context) {
	if h.Notices == nil {
		return
	}
	bound := h.NoticeWait
	if bound <= 0 {
		bound = DefaultNoticeWait
	}
	wctx, cancel := context.WithTimeout(sliceCtx, bound)
	defer cancel()
	if err := h.Notices.Wait(wctx); err != nil {
		h.logger().WarnContext(ctx, "notifications still in flight when the handler returns; they resume in the next invocation of this environment, or are lost",
			"error", err.Error())
	}
}

// settle settles one group's records at once (Handler.Settle); the
// response still reports the failed ones, so the event source mapping
// does what it would have done had this failed.
func (h *Handler) settle(ctx context.Context, recs []events.SQSMessage, failedIDs []string) {
	if h.Settle == nil || len(recs) == 0 {
		return
	}
	failed := make(map[string]bool, len(failedIDs))
	for _, id := range failedIDs {
		failed[id] = true
	}
	var done, retry []events.SQSMessage
	for _, r := range recs {
		if failed[r.MessageId] {
			retry = append(retry, r)
		} else {
			done = append(done, r)
		}
	}
	group := recs[0].Attributes["MessageGroupId"]
	if err := h.Settle.Delete(ctx, done); err != nil {
		h.logger().WarnContext(ctx, "deleting a finished group's records failed; they are deleted when the invocation ends",
			"group", group, "error", err.Error())
	}
	if err := h.Settle.Retry(ctx, retry); err != nil {
		h.logger().WarnContext(ctx, "shortening the wait of a failed group's records failed; they come back after the queue's visibility timeout",
			"group", group, "error", err.Error())
	}
}

// groupRecords splits records by MessageGroupId, keeping delivery order
// within each group and the order in which groups first appear.
func groupRecords(recs []events.SQSMessage) [][]events.SQSMessage {
	index := map[string]int{}
	var groups [][]events.SQSMessage
	for _, r := range recs {
		g := r.Attributes["MessageGroupId"]
		i, ok := index[g]
		if !ok {
			i = len(groups)
			index[g] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	return groups
}

// group processes one message group and returns the SQS message IDs to
// report as failures.
func (h *Handler) group(ctx, sliceCtx context.Context, recs []events.SQSMessage) (failed []string) {
	defer func() {
		if r := recover(); r != nil {
			h.logger().ErrorContext(ctx, "slice group panicked; reporting its records for redelivery",
				"group", recs[0].Attributes["MessageGroupId"], "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			failed = sqsIDs(recs)
		}
	}()
	var batch []entry
	cut := len(recs)
	for i, rec := range recs {
		m, err := sqsq.DecodeRecord(rec)
		if err != nil {
			if !h.deadLetter(ctx, rec, DeadLetter{Source: SourceDecode, MessageID: m.ID, Reason: err.Error()}) {
				cut = i // it and everything after it wait, in order
				break
			}
			continue
		}
		batch = append(batch, entry{rec: rec, msg: m})
	}
	// Normally one run: a group is one thread. A hash collision of two
	// thread IDs onto one group would give several, run in order.
	for len(batch) > 0 {
		n := 1
		for n < len(batch) && batch[n].msg.ThreadID == batch[0].msg.ThreadID {
			n++
		}
		run := batch[:n]
		batch = batch[n:]
		runFailed, retry := h.slice(ctx, sliceCtx, run)
		failed = append(failed, runFailed...)
		if retry {
			for _, e := range batch {
				failed = append(failed, e.rec.MessageId)
			}
			break
		}
	}
	return append(failed, sqsIDs(recs[cut:])...)
}

// slice runs one slice over run. It returns the records to report and
// whether the slice failed (so that the group's later records must wait).
func (h *Handler) slice(ctx, sliceCtx context.Context, run []entry) (failed []string, retry bool) {
	in := runtime.SliceInput{ThreadID: run[0].msg.ThreadID, FirstDelivery: true}
	for _, e := range run {
		in.Messages = append(in.Messages, e.msg)
		if !sqsq.FirstDelivery(e.rec) {
			in.FirstDelivery = false
		}
	}
	cctx, counter := WithCounter(sliceCtx)
	start := h.now()
	res, err := h.Slices.RunSlice(cctx, in)
	dur := h.now().Sub(start)
	if res == nil {
		res = &runtime.SliceResult{}
	}

	// Rejected messages can never succeed: dead-letter them whatever
	// became of the slice, so that a retry does not meet them again.
	settled := map[string]bool{}
	for _, rj := range res.Rejected {
		for _, e := range run {
			if e.msg.ID != rj.ID || settled[e.rec.MessageId] {
				continue
			}
			if h.deadLetter(ctx, e.rec, DeadLetter{Source: SourceRejected, MessageID: rj.ID, Reason: rj.Err.Error()}) {
				settled[e.rec.MessageId] = true
			} else if err == nil {
				failed = append(failed, e.rec.MessageId)
			}
		}
	}
	outcome := OutcomeOK
	switch {
	case err != nil:
		outcome, retry = OutcomeRetry, true
		for _, e := range run {
			if !settled[e.rec.MessageId] {
				failed = append(failed, e.rec.MessageId)
			}
		}
	case res.ModelErr != nil:
		outcome = OutcomeModelError
	case len(res.Processed) == 0 && len(res.Duplicates) > 0 && res.Completions == 0:
		outcome = OutcomeDuplicate
	}
	h.report(ctx, run, in, res, err, outcome, dur, counter)
	return failed, retry
}

// report writes the slice's log line and metrics.
func (h *Handler) report(ctx context.Context, run []entry, in runtime.SliceInput, res *runtime.SliceResult, err error,
	outcome string, dur time.Duration, counter *Counter) {
	sqsIDs := make([]string, len(run))
	msgIDs := make([]string, len(run))
	for i, e := range run {
		sqsIDs[i], msgIDs[i] = e.rec.MessageId, e.msg.ID
	}
	by := make([]any, 0, 8)
	counts := counter.Counts()
	for _, k := range counter.kinds() {
		by = append(by, slog.Int(k, counts[k]))
	}
	attrs := []any{
		slog.String("thread", in.ThreadID),
		slog.String("slice", res.ID()),
		slog.Any("sqs_message_ids", sqsIDs),
		slog.Any("message_ids", msgIDs),
		slog.Bool("first_delivery", in.FirstDelivery),
		slog.String("outcome", outcome),
		slog.Float64("duration_ms", ms(dur)),
		slog.Int("round_trips", counter.Total()),
		slog.Group("round_trips_by", by...),
		slog.Int("processed", len(res.Processed)),
		slog.Int("duplicates", len(res.Duplicates)),
		slog.Int("dropped", len(res.Dropped)),
		slog.Int("rejected", len(res.Rejected)),
		slog.Int("completions", res.Completions),
	}
	if res.Dispatched != "" {
		attrs = append(attrs, slog.String("dispatched", res.Dispatched))
	}
	if res.Continued {
		attrs = append(attrs, slog.Bool("continued", true))
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		attrs = append(attrs, slog.String("request_id", lc.AwsRequestID))
	}
	level := slog.LevelInfo
	if res.ModelErr != nil {
		attrs = append(attrs, slog.String("model_error", res.ModelErr.Error()))
		level = slog.LevelWarn
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
		level = slog.LevelWarn
	}
	h.logger().Log(ctx, level, "slice", attrs...)
	if err := h.Metrics.Emit(map[string]string{"Outcome": outcome}, []lambdafn.Metric{
		{Name: "SliceDuration", Unit: "Milliseconds", Value: ms(dur)},
		{Name: "SliceRoundTrips", Unit: "Count", Value: float64(counter.Total())},
		{Name: "SliceMessages", Unit: "Count", Value: float64(len(run))},
	}, map[string]any{"thread": in.ThreadID, "slice": res.ID()}); err != nil {
		h.logger().WarnContext(ctx, "writing metrics failed", "error", err.Error())
	}
	if res.Agent != "" && (res.Completions > 0 || res.Tool != "") {
		if err := h.Metrics.Emit(map[string]string{"Agent": res.Agent}, agentMetrics(res, dur), map[string]any{"thread": in.ThreadID, "slice": res.ID()}); err != nil {
			h.logger().WarnContext(ctx, "writing metrics failed", "error", err.Error())
		}
	}
	if res.Tool != "" {
		// The tool's latency: from the call's commit to its result's
		// arrival (docs/timeline.md).
		if err := h.Metrics.Emit(map[string]string{"Tool": res.Tool}, []lambdafn.Metric{
			{Name: "ToolLatency", Unit: "Milliseconds", Value: ms(res.ToolLatency)},
		}, map[string]any{"thread": in.ThreadID, "slice": res.ID(), "agent": res.Agent}); err != nil {
			h.logger().WarnContext(ctx, "writing metrics failed", "error", err.Error())
		}
	}
}

// deadLetter moves rec to the dead-letter queue and reports whether it did.
func (h *Handler) deadLetter(ctx context.Context, rec events.SQSMessage, dl DeadLetter) bool {
	err := h.DeadLetters.DeadLetter(ctx, rec, dl)
	attrs := []any{slog.String("sqs_message_id", rec.MessageId), slog.String("message_id", dl.MessageID),
		slog.String("group", rec.Attributes["MessageGroupId"]), slog.String("source", dl.Source), slog.String("reason", dl.Reason)}
	if err != nil {
		h.logger().ErrorContext(ctx, "moving a record to the dead-letter queue failed; reporting it for redelivery",
			append(attrs, slog.String("error", err.Error()))...)
		return false
	}
	h.logger().WarnContext(ctx, "dead-lettered", attrs...)
	if err := h.Metrics.Emit(map[string]string{"Source": dl.Source}, []lambdafn.Metric{{Name: "DeadLettered", Unit: "Count", Value: 1}},
		map[string]any{"sqs_message_id": rec.MessageId}); err != nil {
		h.logger().WarnContext(ctx, "writing metrics failed", "error", err.Error())
	}
	return true
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func sqsIDs(recs []events.SQSMessage) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.MessageId
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// agentMetrics are a slice's per-agent metrics: completions, tokens, and
// where its time went (docs/timeline.md): generating, the rest of the
// slice, the longest queue delay of its batch (from each message's
// arrival: the RAP receiver's stamp, else SQS's SentTimestamp), and the
// wait on the tool whose result it consumed. Summed per agent, their
// ratio is the wait fraction: AgentToolWait / (AgentToolWait +
// AgentGenerating + AgentInSlice + AgentQueueDelay).
func agentMetrics(res *runtime.SliceResult, dur time.Duration) []lambdafn.Metric {
	u := res.Usage
	out := []lambdafn.Metric{
		{Name: "AgentCompletions", Unit: "Count", Value: float64(res.Completions)},
		{Name: "AgentInputTokens", Unit: "Count", Value: float64(u.Input)},
		{Name: "AgentOutputTokens", Unit: "Count", Value: float64(u.Output)},
		{Name: "AgentCacheReadTokens", Unit: "Count", Value: float64(u.Cached)},
		{Name: "AgentCacheWriteTokens", Unit: "Count", Value: float64(u.CacheWrite)},
		{Name: "AgentGenerating", Unit: "Milliseconds", Value: ms(res.Generating)},
		{Name: "AgentInSlice", Unit: "Milliseconds", Value: ms(max(0, dur-res.Generating))},
		{Name: "AgentQueueDelay", Unit: "Milliseconds", Value: ms(res.Queued)},
	}
	if res.Tool != "" {
		out = append(out, lambdafn.Metric{Name: "AgentToolWait", Unit: "Milliseconds", Value: ms(res.ToolLatency)})
	}
	return out
}
