package runtime

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"
)

// Mutant names a deliberate bug the engine can be built with, so that the
// crash matrix (internal/chaos, `make mutants`) can show it catches each.
// Only a binary built with the `mutants` build tag reads the one to plant
// (from AGENTSLICE_MUTANT); in every other build chaosmutant is the
// constant "" and each hook below compiles away. Only this file's hooks
// read chaosmutant (mutanthooks_test.go checks it).
type Mutant string

// The mutants. Each names the one place it changes.
const (
	// MutantSkipOutboxResend skips sending a loaded outbox (and an
	// undispatched call) at the start of a slice.
	MutantSkipOutboxResend Mutant = "skip_outbox_resend"
	// MutantTrustFirstDelivery takes any first delivery as proof that the
	// previous slice sent its calls and messages, not only its outputs.
	MutantTrustFirstDelivery Mutant = "trust_first_delivery"
	// MutantLoseLateResult records a late tool result as consumed but
	// never adds it to history.
	MutantLoseLateResult Mutant = "lose_late_result"
	// MutantNoAfterDispatchPoint deletes the after_dispatch crash point.
	MutantNoAfterDispatchPoint Mutant = "no_after_dispatch_point"
	// MutantRandomCallID mints call IDs at random instead of from the
	// call's position in history.
	MutantRandomCallID Mutant = "random_call_id"
	// MutantNoConsumedCheck drops the check of a batch against the
	// message IDs history has consumed.
	MutantNoConsumedCheck Mutant = "no_consumed_check"
	// MutantDedupBeforeCommit marks the batch processed in the dedup store
	// before the commit that consumes it.
	MutantDedupBeforeCommit Mutant = "dedup_before_commit"
	// MutantNoVersionCheck commits at whatever version the thread is at,
	// as a store without optimistic concurrency control would.
	MutantNoVersionCheck Mutant = "no_version_check"
	// MutantRecoveryRerunsModel runs the model again after resending a
	// loaded outbox, though the turn that wrote it was committed.
	MutantRecoveryRerunsModel Mutant = "recovery_reruns_model"

	// The five classes of bug an audit found the matrix missed; each must
	// be caught by the end state's meaning (internal/chaos, meaning.go and
	// the liveness checks), not only by a golden snapshot's text.

	// MutantLoseDeferredReport drops a child's report that was deferred
	// behind a pending call when the call gets its result (a lost message).
	MutantLoseDeferredReport Mutant = "lose_deferred_report"
	// MutantNoContinuation ends a slice that hit its completion cap
	// without enqueuing its continuation (a thread stranded forever).
	MutantNoContinuation Mutant = "no_continuation"
	// MutantThreadedFinalKeepsSubscription ends a subscription on a final
	// event only when the event is associative (a subscription that never
	// ends).
	MutantThreadedFinalKeepsSubscription Mutant = "threaded_final_keeps_subscription"
	// MutantReportToRoot sends a report to the root of the thread's stack
	// instead of its parent: a grandchild's report is refused there and
	// its parent waits, open, for ever.
	MutantReportToRoot Mutant = "report_to_root"
	// MutantDeadlineNeverFires gives up on a call only after its deadline,
	// not at it; the last check is armed at the deadline, so it re-arms
	// itself at the same instant for ever (a deadline that never fires).
	MutantDeadlineNeverFires Mutant = "deadline_never_fires"
)

// Mutants lists every mutant.
var Mutants = []Mutant{MutantSkipOutboxResend, MutantTrustFirstDelivery, MutantLoseLateResult,
	MutantNoAfterDispatchPoint, MutantRandomCallID, MutantNoConsumedCheck, MutantDedupBeforeCommit,
	MutantNoVersionCheck, MutantRecoveryRerunsModel, MutantLoseDeferredReport, MutantNoContinuation,
	MutantThreadedFinalKeepsSubscription, MutantReportToRoot, MutantDeadlineNeverFires}

// MeaningMutants are the mutants the end state's meaning must catch on
// its own, in a crash-free run, without the golden snapshots.
var MeaningMutants = []Mutant{MutantLoseLateResult, MutantLoseDeferredReport, MutantNoContinuation,
	MutantThreadedFinalKeepsSubscription, MutantReportToRoot, MutantDeadlineNeverFires}

// ActiveMutant returns the mutant this binary was built to plant, or ""
// (always "" without the `mutants` build tag).
func ActiveMutant() Mutant { return chaosmutant }

// The engine's phases call the hooks below, each at one point, so that
// the planted mutants stay off their main path; without the mutants tag
// each hook is a constant check the compiler removes.

// resend is the recovery phase's send of a loaded outbox
// (MutantSkipOutboxResend: the unsent outbox waits for the end of the
// slice).
func (s *slice) resend(ctx context.Context) (rejected bool, err error) {
	if chaosmutant == MutantSkipOutboxResend {
		return false, nil
	}
	return s.send(ctx)
}

// mutateRecovered is what the recovery phase returns as wake
// (MutantRecoveryRerunsModel: always).
func (s *slice) mutateRecovered(wake bool) bool {
	return wake || chaosmutant == MutantRecoveryRerunsModel
}

// mutateAfterFold runs between the fold and the first commit
// (MutantDedupBeforeCommit: marks the inputs processed already).
func (s *slice) mutateAfterFold(ctx context.Context) {
	if chaosmutant == MutantDedupBeforeCommit && s.e.Dedup != nil && len(s.inputs) > 0 {
		_ = s.e.Dedup.Mark(ctx, s.threadID, s.inputs)
	}
}

// mutateTrustsFirstDelivery says the recovery phase takes a first
// delivery as proof enough that the outbox went out
// (MutantTrustFirstDelivery).
func (s *slice) mutateTrustsFirstDelivery(in SliceInput) bool {
	return chaosmutant == MutantTrustFirstDelivery && in.FirstDelivery
}

// mutateLosesDeferred says a deferred message is dropped when the pending
// call closes (MutantLoseDeferredReport: a report).
func (s *slice) mutateLosesDeferred(m Message) bool {
	return chaosmutant == MutantLoseDeferredReport && m.Kind == KindReport
}

// mutateCommit rewrites c, just before it is committed, to commit at the
// stored version (MutantNoVersionCheck).
func (s *slice) mutateCommit(ctx context.Context, c *Commit) {
	if chaosmutant != MutantNoVersionCheck {
		return
	}
	th, err := s.e.History.Load(ctx, s.threadID)
	if err != nil || th.State.Version == c.Expected {
		return
	}
	c.Expected = th.State.Version
	c.State.Version = th.State.Version + 1
	c.State.Length = th.State.Length + len(c.Append)
}

// mutateLosesLateResult records a late result as consumed without adding
// it to history (MutantLoseLateResult).
func (s *slice) mutateLosesLateResult(m Message) bool {
	if chaosmutant != MutantLoseLateResult {
		return false
	}
	s.inputs = append(s.inputs, m.ID)
	s.changed()
	return true
}

// mutateKeepsThreadedSubscription says a final event of a threaded
// subscription keeps it (MutantThreadedFinalKeepsSubscription).
func mutateKeepsThreadedSubscription() bool {
	return chaosmutant == MutantThreadedFinalKeepsSubscription
}

// mutateDropsContinuation says a capped slice enqueues no continuation
// (MutantNoContinuation).
func mutateDropsContinuation() bool { return chaosmutant == MutantNoContinuation }

// mutateDeadlineWaits says a call whose deadline dl is now does not end
// yet (MutantDeadlineNeverFires: it ends only once dl is past).
func mutateDeadlineWaits(now, dl time.Time) bool {
	return chaosmutant == MutantDeadlineNeverFires && !now.After(dl)
}

// mutateSkipsConsumedCheck says a batch is not checked against history
// (MutantNoConsumedCheck).
func mutateSkipsConsumedCheck() bool { return chaosmutant == MutantNoConsumedCheck }

// mutateDropsCrashPoint says crash point p never fires
// (MutantNoAfterDispatchPoint: after_dispatch).
func mutateDropsCrashPoint(p CrashPoint) bool {
	return chaosmutant == MutantNoAfterDispatchPoint && p == CrashAfterDispatch
}

// mutantCallID is a random call ID and true (MutantRandomCallID), else
// false.
func mutantCallID(threadID string, pos int) (string, bool) {
	if chaosmutant != MutantRandomCallID {
		return "", false
	}
	return DeriveID("call_", threadID, strconv.Itoa(pos), strconv.FormatUint(rand.Uint64(), 36)), true
}

// mutantCallIDs says call IDs are minted at random (MutantRandomCallID),
// so that checking one compares it with a freshly minted one.
func mutantCallIDs() bool { return chaosmutant == MutantRandomCallID }

// mutateReportTo is where a report of the thread with state st goes: its
// parent (MutantReportToRoot: the root of its stack).
func mutateReportTo(st *ThreadState) string {
	if chaosmutant == MutantReportToRoot {
		return st.Stack[0]
	}
	return st.Parent
}
