package runtime

import "context"

// Mutant names a deliberate bug the engine can be built with, so that the
// crash matrix (internal/chaos, `make mutants`) can show it catches each.
// Only a binary built with the `mutants` build tag reads the one to plant
// (from AGENTSLICE_MUTANT); in every other build chaosmutant is the
// constant "" and each check at a mutant site compiles away.
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
)

// Mutants lists every mutant.
var Mutants = []Mutant{MutantSkipOutboxResend, MutantTrustFirstDelivery, MutantLoseLateResult,
	MutantNoAfterDispatchPoint, MutantRandomCallID, MutantNoConsumedCheck, MutantDedupBeforeCommit,
	MutantNoVersionCheck, MutantRecoveryRerunsModel}

// ActiveMutant returns the mutant this binary was built to plant, or ""
// (always "" without the `mutants` build tag).
func ActiveMutant() Mutant { return chaosmutant }

// blindCommit rewrites c to commit at the stored version
// (MutantNoVersionCheck).
func (s *slice) blindCommit(ctx context.Context, c *Commit) {
	th, err := s.e.History.Load(ctx, s.threadID)
	if err != nil || th.State.Version == c.Expected {
		return
	}
	c.Expected = th.State.Version
	c.State.Version = th.State.Version + 1
	c.State.Length = th.State.Length + len(c.Append)
}
