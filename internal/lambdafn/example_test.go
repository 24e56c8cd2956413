package lambdafn_test

import (
	"fmt"

	"github.com/agentslice/agentslice/internal/lambdafn"
)

// A function reads its environment once at start; the first variable that
// is missing or wrong is named in the error.
func ExampleLoadReceiverConfig() {
	env := map[string]string{
		lambdafn.EnvInputQueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/agentslice-input.fifo",
	}
	_, err := lambdafn.LoadReceiverConfig(func(k string) string { return env[k] })
	fmt.Println(err)
	// Output:
	// environment variable AGENTSLICE_CALLBACK_KEYS_SECRET: missing: set it to the Secrets Manager secret holding the callback keyring (or, for local runs only, set AGENTSLICE_CALLBACK_KEYS to the keyring)
}
