package serverless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/runtime"
)

type failingModel struct{ err error }

func (m failingModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	return m.err
}

// A throttled call is counted as ModelThrottles with the model's name as
// its dimension; other errors are not. (No Bedrock here: the error is the
// one the SDK returns for ThrottlingException.)
func TestThrottlesAreCountedPerModel(t *testing.T) {
	var buf bytes.Buffer
	metrics := &lambdafn.Metrics{W: &buf}
	req := &runtime.CompletionRequest{ThreadID: "t1"}
	req.SetID("c1")
	throttled := fmt.Errorf("bedrock model m: %w", &smithy.GenericAPIError{Code: "ThrottlingException"})
	for _, err := range []error{throttled, errors.New("connection reset")} {
		m := &throttleCounter{Model: failingModel{err}, name: "claude", metrics: metrics, log: slog.New(slog.DiscardHandler)}
		if got := m.Complete(context.Background(), req, nil); !errors.Is(got, err) {
			t.Fatalf("error %v not passed through: %v", err, got)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d metric records, want 1 (the throttle only): %q", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["Model"] != "claude" || rec[MetricModelThrottles] != float64(1) {
		t.Fatalf("record %v: want Model=claude, %s=1", rec, MetricModelThrottles)
	}
}
