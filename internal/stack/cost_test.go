package stack

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"

	"github.com/agentslice/agentslice/internal/cost"
)

// The cost model (internal/cost) prices the functions' memory, their log
// retention and the queues Lambda polls; this pins its constants to what
// the stack deploys.
func TestCostModelMatchesStack(t *testing.T) {
	f := setup(t)
	for _, fn := range []struct {
		f      awslambda.Function
		memory float64
	}{
		{f.def.Slice, cost.SliceMemoryMB},
		{f.def.Receiver, cost.ReceiverMemoryMB},
		{f.def.Relay, cost.RelayMemoryMB},
	} {
		p := propsOf(t, f.defJSON, f.def.Resolve(fn.f.FunctionArn()))
		if !sameJSON(p["MemorySize"], fn.memory) {
			t.Errorf("%s: MemorySize %s, the cost model prices %v MB", *fn.f.Node().Id(), js(p["MemorySize"]), fn.memory)
		}
	}
	for id, r := range resources(f.defJSON, "AWS::Logs::LogGroup") {
		if got := props(r)["RetentionInDays"]; !sameJSON(got, float64(cost.LogRetentionDays)) {
			t.Errorf("log group %s keeps %s days, the cost model %d", id, js(got), cost.LogRetentionDays)
		}
	}
	if n := len(resources(f.defJSON, "AWS::Lambda::EventSourceMapping")); n != cost.DefaultPolledQueues {
		t.Errorf("%d event source mappings (polled queues), the cost model counts %d", n, cost.DefaultPolledQueues)
	}
}
