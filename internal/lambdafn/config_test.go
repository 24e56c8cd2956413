package lambdafn_test

import (
	"errors"
	"net/http"
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

// The receiver's class database is optional: DSQL connects as the reader
// role unless told otherwise and needs the region; PostgreSQL is for local
// runs; both at once is an error naming the variable.
func TestReceiverClassDB(t *testing.T) {
	t.Parallel()
	base := func(extra map[string]string) map[string]string {
		m := map[string]string{lambdafn.EnvInputQueueURL: "https://sqs/1/in.fifo", lambdafn.EnvCallbackKeys: "k1:AAAA"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	c, err := lambdafn.LoadReceiverConfig(getenv(base(nil)))
	if err != nil || c.Classes.Set() {
		t.Fatalf("no class database configured: %+v, %v", c.Classes, err)
	}
	c, err = lambdafn.LoadReceiverConfig(getenv(base(map[string]string{lambdafn.EnvDSQLEndpoint: "abc.dsql.us-east-1.on.aws", lambdafn.EnvRegion: "us-east-1"})))
	if err != nil || !c.Classes.Set() || c.Classes.DSQLUser != lambdafn.DefaultReaderUser || c.Classes.Region != "us-east-1" {
		t.Fatalf("DSQL class database: %+v, %v", c.Classes, err)
	}
	var ee *lambdafn.EnvError
	if _, err := lambdafn.LoadReceiverConfig(getenv(base(map[string]string{lambdafn.EnvDSQLEndpoint: "abc.dsql.us-east-1.on.aws"}))); !errors.As(err, &ee) || ee.Var != lambdafn.EnvRegion {
		t.Fatalf("DSQL without a region: %v", err)
	}
	if _, err := lambdafn.LoadReceiverConfig(getenv(base(map[string]string{lambdafn.EnvDSQLEndpoint: "abc", lambdafn.EnvRegion: "us-east-1",
		lambdafn.EnvPGDSN: "postgres://x"}))); !errors.As(err, &ee) || ee.Var != lambdafn.EnvPGDSN {
		t.Fatalf("both databases: %v", err)
	}
}

// The functions' default HTTP clients: the tool client has a timeout
// covering the body, the model client none (the slice's context bounds a
// stream; TestBedrockStreamOutlivesTheOldTimeout in internal/serverless
// streams past the old limit through the built function).
func TestDefaultHTTPClients(t *testing.T) {
	t.Parallel()
	var o lambdafn.Options
	o.Defaults(0)
	if o.HTTPClient.Timeout != lambdafn.ToolHTTPTimeout {
		t.Fatalf("tool client timeout %v, want %v", o.HTTPClient.Timeout, lambdafn.ToolHTTPTimeout)
	}
	if o.ModelHTTPClient == nil || o.ModelHTTPClient == o.HTTPClient || o.ModelHTTPClient.Timeout != 0 {
		t.Fatalf("model client %+v: want its own client without a timeout", o.ModelHTTPClient)
	}
	tr, ok := o.ModelHTTPClient.Transport.(*http.Transport)
	if !ok || tr.ResponseHeaderTimeout != 0 || tr.TLSHandshakeTimeout != lambdafn.ModelTLSHandshakeTimeout {
		t.Fatalf("model transport %+v: want bounded set-up and no header timeout", o.ModelHTTPClient.Transport)
	}
}
