//go:build !agentslice_faults

package serverless

import "github.com/agentslice/agentslice/internal/runtime"

// killFaults is nil in every normal build; see killfault_on.go (the e2e
// kill test's bootstrap is built with the agentslice_faults tag).
func killFaults(func(string) string) runtime.FaultInjector { return nil }
