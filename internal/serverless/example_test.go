package serverless_test

import (
	"fmt"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/serverless"
)

// The slice function's configuration comes from the variables the CDK
// stack sets; each must be there and well formed.
func ExampleLoadSliceConfig() {
	env := map[string]string{
		lambdafn.EnvInputQueueURL:  "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-input.fifo",
		lambdafn.EnvDLQURL:         "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-dlq.fifo",
		lambdafn.EnvOutputQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-output.fifo",
	}
	_, err := serverless.LoadSliceConfig(func(k string) string { return env[k] })
	fmt.Println(err)
	// Output:
	// environment variable AGENTSLICE_OUTPUT_QUEUE_URL: "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-output.fifo" is a FIFO queue; this must be a standard queue
}
