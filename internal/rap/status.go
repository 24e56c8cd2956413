package rap

import (
	"github.com/agentslice/agentslice/rapkit"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Status asks the tool server at base whether it still tracks a call (a
// pending call or the subscription it started): POST
// {base}/tool_call_status, one attempt bounded by timeout, never retried
// (the runtime asks again at its next check). The answer follows the
// spec's error semantics:
//   - 200 with {"alive": true} → StatusAlive; {"alive": false} → StatusDead;
//   - a 2xx body that is not that object, or any 4xx (a server that
//     predates the endpoint answers 404) → StatusDead;
//   - 5xx, 3xx, transport errors, timeouts → StatusUnknown, with the error.
func (d *Dispatcher) Status(ctx context.Context, base, threadID, callID string, timeout time.Duration) (runtime.CallStatus, error) {
	body, err := rapkit.EncodeJSON(ToolCallStatus{ThreadID: threadID, ToolCallID: callID})
	if err != nil {
		return runtime.StatusUnknown, fmt.Errorf("rap: encoding status check of %s: %w", callID, err)
	}
	resp, err := rapkit.Exchange(ctx, d.client, http.MethodPost, base+ToolCallStatusPath, body,
		RetryPolicy{Attempts: 1, AttemptTimeout: timeout, Total: timeout}, 4<<10)
	var se *StatusError
	switch {
	case err == nil:
	case errors.As(err, &se) && se.Status >= 400 && se.Status < 500:
		return runtime.StatusDead, nil
	default:
		return runtime.StatusUnknown, fmt.Errorf("rap: status check of %s of thread %s: %w", callID, threadID, err)
	}
	var ans struct {
		Alive *bool `json:"alive"`
	}
	if json.Unmarshal(resp, &ans) != nil || ans.Alive == nil {
		return runtime.StatusDead, nil
	}
	if *ans.Alive {
		return runtime.StatusAlive, nil
	}
	return runtime.StatusDead, nil
}

var (
	_ runtime.StatusChecker = (*remoteTool)(nil)
	_ runtime.CallDeadliner = (*remoteTool)(nil)
)

// CallStatus asks the server the tool's toolset came from: the one that
// received the call.
func (t *remoteTool) CallStatus(ctx context.Context, threadID, callID string) (runtime.CallStatus, error) {
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	return t.d.Status(ctx, t.set.base, threadID, callID, timeout)
}

// CallDeadline is the server's configured deadline (LoaderConfig.
// Deadlines), if any, and whether the tool says it is long-running.
func (t *remoteTool) CallDeadline() (time.Duration, bool) {
	return t.set.deadline, t.def.Annotations != nil && t.def.Annotations.LongRunning
}
