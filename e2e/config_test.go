//go:build e2e

package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/serverless/lambdatest"
	"github.com/agentslice/agentslice/internal/testenv"
)

// TestMissingVariableStopsTheFunction starts each bootstrap without its
// environment: the first invocation fails at init, and the function's log
// names the missing variable.
func TestMissingVariableStopsTheFunction(t *testing.T) {
	bin := testenv.Need(t, binVar)
	rieBin := testenv.Need(t, rieVar)
	for _, fn := range []string{"slicefn", "rapreceiver", "delayrelay"} {
		t.Run(fn, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var lines []string
			e := &lambdatest.RIE{Binary: rieBin, Bootstrap: filepath.Join(bin, fn, "bootstrap"),
				Env: lambdatest.Env("AWS_REGION=us-east-1"),
				Lines: func(s string) {
					mu.Lock()
					lines = append(lines, s)
					mu.Unlock()
				}}
			if err := e.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, err := e.InvokeSQS(context.Background(), events.SQSEvent{})
			e.Stop() // waits for the output to be read
			var fe *lambdatest.FunctionError
			if !errors.As(err, &fe) {
				t.Fatalf("invoke: %v, want a function error", err)
			}
			out := strings.Join(lines, "\n")
			if !strings.Contains(out, `"msg":"cannot start"`) || !strings.Contains(out, `"variable":"`+lambdafn.EnvInputQueueURL+`"`) {
				t.Fatalf("the function's output does not name %s:\n%s", lambdafn.EnvInputQueueURL, out)
			}
		})
	}
}
