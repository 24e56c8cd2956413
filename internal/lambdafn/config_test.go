package lambdafn_test

import (
	"errors"
	"testing"

	"github.com/agentslice/agentslice/internal/lambdafn"
)

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadReceiverAndRelayConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{lambdafn.EnvInputQueueURL: "https://sqs/1/in.fifo", lambdafn.EnvCallbackKeys: "k1:AAAA"}
	if c, err := lambdafn.LoadReceiverConfig(getenv(env)); err != nil || c.Keys.Inline != "k1:AAAA" {
		t.Fatalf("receiver config %+v, %v", c, err)
	}
	if c, err := lambdafn.LoadRelayConfig(getenv(env)); err != nil || c.InputQueueURL == "" {
		t.Fatalf("relay config %+v, %v", c, err)
	}
	delete(env, lambdafn.EnvCallbackKeys)
	var ee *lambdafn.EnvError
	if _, err := lambdafn.LoadReceiverConfig(getenv(env)); !errors.As(err, &ee) || ee.Var != lambdafn.EnvCallbackKeysSecret {
		t.Fatalf("receiver without keys: %v", err)
	}
	if _, err := lambdafn.LoadRelayConfig(getenv(map[string]string{})); !errors.As(err, &ee) || ee.Var != lambdafn.EnvInputQueueURL {
		t.Fatalf("relay without queue: %v", err)
	}
}
