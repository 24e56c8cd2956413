package serverless_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/serverless"
)

// validSliceEnv is a complete slice-function environment.
func validSliceEnv(t *testing.T) map[string]string {
	t.Helper()
	catalog, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		serverless.EnvInputQueueURL:      "https://sqs.us-east-1.amazonaws.com/1/in.fifo",
		serverless.EnvDLQURL:             "https://sqs.us-east-1.amazonaws.com/1/dlq.fifo",
		serverless.EnvOutputQueueURL:     "https://sqs.us-east-1.amazonaws.com/1/out",
		serverless.EnvDelayQueueURL:      "https://sqs.us-east-1.amazonaws.com/1/delay",
		serverless.EnvDedupTable:         "dedup",
		serverless.EnvDSQLEndpoint:       "abc.dsql.us-east-1.on.aws",
		serverless.EnvRegion:             "us-east-1",
		serverless.EnvSchedulerRoleARN:   "arn:aws:iam::1:role/s",
		serverless.EnvModelCatalog:       string(catalog),
		serverless.EnvToolServers:        "https://tools.example.com, https://more.example.com/base",
		serverless.EnvCallbackURL:        "https://abc.lambda-url.us-east-1.on.aws/",
		serverless.EnvCallbackKeysSecret: "arn:aws:secretsmanager:us-east-1:1:secret:keys",
	}
}

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadSliceConfig(t *testing.T) {
	t.Parallel()
	c, err := serverless.LoadSliceConfig(getenv(validSliceEnv(t)))
	if err != nil {
		t.Fatal(err)
	}
	if c.DSQLUser != serverless.DefaultDSQLUser || c.Region != "us-east-1" || c.PGDSN != "" ||
		len(c.ToolServers) != 2 || c.ToolServers[1] != "https://more.example.com/base" ||
		c.Model.Name != "scripted" || c.Margin != serverless.DefaultMargin || c.Keys.SecretARN == "" {
		t.Fatalf("config = %+v", c)
	}
}

func TestLoadSliceConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		change  map[string]string // "" deletes
		wantVar string
		want    string
	}{
		{"input queue missing", map[string]string{serverless.EnvInputQueueURL: ""}, serverless.EnvInputQueueURL, "missing"},
		{"input queue not FIFO", map[string]string{serverless.EnvInputQueueURL: "https://sqs/1/in"}, serverless.EnvInputQueueURL, "not a FIFO"},
		{"input queue not a URL", map[string]string{serverless.EnvInputQueueURL: "in.fifo"}, serverless.EnvInputQueueURL, "absolute"},
		{"output queue FIFO", map[string]string{serverless.EnvOutputQueueURL: "https://sqs/1/out.fifo"}, serverless.EnvOutputQueueURL, "standard"},
		{"dlq missing", map[string]string{serverless.EnvDLQURL: ""}, serverless.EnvDLQURL, "missing"},
		{"delay queue missing", map[string]string{serverless.EnvDelayQueueURL: ""}, serverless.EnvDelayQueueURL, "missing"},
		{"dedup table missing", map[string]string{serverless.EnvDedupTable: ""}, serverless.EnvDedupTable, "missing"},
		{"no database", map[string]string{serverless.EnvDSQLEndpoint: ""}, serverless.EnvDSQLEndpoint, serverless.EnvPGDSN},
		{"two databases", map[string]string{serverless.EnvPGDSN: "postgres://x@h/db"}, serverless.EnvPGDSN, "exactly one"},
		{"no region for DSQL", map[string]string{serverless.EnvRegion: ""}, serverless.EnvRegion, "region"},
		{"scheduler role missing", map[string]string{serverless.EnvSchedulerRoleARN: ""}, serverless.EnvSchedulerRoleARN, "missing"},
		{"catalog missing", map[string]string{serverless.EnvModelCatalog: ""}, serverless.EnvModelCatalog, "missing"},
		{"catalog malformed", map[string]string{serverless.EnvModelCatalog: "{"}, serverless.EnvModelCatalog, "malformed"},
		{"unknown model", map[string]string{serverless.EnvModel: "gpt-9"}, serverless.EnvModel, "not in the catalog"},
		{"bad tool server", map[string]string{serverless.EnvToolServers: "https://ok.example.com,ftp://x"}, serverless.EnvToolServers, "entry 1"},
		{"callback URL missing", map[string]string{serverless.EnvCallbackURL: ""}, serverless.EnvCallbackURL, "missing"},
		{"no keys", map[string]string{serverless.EnvCallbackKeysSecret: ""}, serverless.EnvCallbackKeysSecret, serverless.EnvCallbackKeys},
		{"two key sources", map[string]string{serverless.EnvCallbackKeys: "k1:AAAA"}, serverless.EnvCallbackKeys, "exactly one"},
		{"bad margin", map[string]string{serverless.EnvSliceMargin: "soon"}, serverless.EnvSliceMargin, "duration"},
		{"bad log level", map[string]string{serverless.EnvLogLevel: "loud"}, serverless.EnvLogLevel, "log level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := validSliceEnv(t)
			for k, v := range tt.change {
				if v == "" {
					delete(env, k)
				} else {
					env[k] = v
				}
			}
			_, err := serverless.LoadSliceConfig(getenv(env))
			var ee *serverless.EnvError
			if !errors.As(err, &ee) {
				t.Fatalf("err = %v, want an *EnvError", err)
			}
			if ee.Var != tt.wantVar || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.wantVar) {
				t.Fatalf("err = %v, want it to name %s and say %q", err, tt.wantVar, tt.want)
			}
		})
	}
}

func TestLoadSliceConfigLocal(t *testing.T) {
	t.Parallel()
	env := validSliceEnv(t)
	delete(env, serverless.EnvDSQLEndpoint)
	delete(env, serverless.EnvRegion)
	delete(env, serverless.EnvCallbackKeysSecret)
	delete(env, serverless.EnvToolServers)
	env[serverless.EnvPGDSN] = "postgres://agentslice@127.0.0.1:54329/agentslice"
	env[serverless.EnvCallbackKeys] = "k1:c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA"
	env[serverless.EnvSliceMargin] = "1500ms"
	env[serverless.EnvLogLevel] = "debug"
	c, err := serverless.LoadSliceConfig(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.PGDSN == "" || c.DSQLEndpoint != "" || c.Keys.Inline == "" || c.ToolServers != nil || c.Margin != 1500*time.Millisecond {
		t.Fatalf("config = %+v", c)
	}
}

func TestLoadReceiverAndRelayConfig(t *testing.T) {
	t.Parallel()
	env := map[string]string{serverless.EnvInputQueueURL: "https://sqs/1/in.fifo", serverless.EnvCallbackKeys: "k1:AAAA"}
	if c, err := serverless.LoadReceiverConfig(getenv(env)); err != nil || c.Keys.Inline != "k1:AAAA" {
		t.Fatalf("receiver config %+v, %v", c, err)
	}
	if c, err := serverless.LoadRelayConfig(getenv(env)); err != nil || c.InputQueueURL == "" {
		t.Fatalf("relay config %+v, %v", c, err)
	}
	delete(env, serverless.EnvCallbackKeys)
	var ee *serverless.EnvError
	if _, err := serverless.LoadReceiverConfig(getenv(env)); !errors.As(err, &ee) || ee.Var != serverless.EnvCallbackKeysSecret {
		t.Fatalf("receiver without keys: %v", err)
	}
	if _, err := serverless.LoadRelayConfig(getenv(map[string]string{})); !errors.As(err, &ee) || ee.Var != serverless.EnvInputQueueURL {
		t.Fatalf("relay without queue: %v", err)
	}
}
