package rap

import (
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/rapkit"
)

// TestReservedToolNameIsTheEngines: the public kit refuses toolsets offering
// the runtime's synthetic-event tool name; it keeps its own copy of the name
// (it must not import the engine), which must stay the engine's.
func TestReservedToolNameIsTheEngines(t *testing.T) {
	if rapkit.ReservedToolName != runtime.InjectedToolName {
		t.Fatalf("rapkit.ReservedToolName = %q, runtime.InjectedToolName = %q", rapkit.ReservedToolName, runtime.InjectedToolName)
	}
}
