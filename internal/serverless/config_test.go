package serverless_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

// validSliceEnv is a complete slice-function environment.
func validSliceEnv(t *testing.T) map[string]string {
	t.Helper()
	catalog, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		lambdafn.EnvInputQueueURL:      "https://sqs.us-east-1.amazonaws.com/1/in.fifo",
		lambdafn.EnvDLQURL:             "https://sqs.us-east-1.amazonaws.com/1/dlq.fifo",
		lambdafn.EnvOutputQueueURL:     "https://sqs.us-east-1.amazonaws.com/1/out",
		lambdafn.EnvDelayQueueURL:      "https://sqs.us-east-1.amazonaws.com/1/delay",
		lambdafn.EnvDedupTable:         "dedup",
		lambdafn.EnvDSQLEndpoint:       "abc.dsql.us-east-1.on.aws",
		lambdafn.EnvRegion:             "us-east-1",
		lambdafn.EnvSchedulerRoleARN:   "arn:aws:iam::1:role/s",
		lambdafn.EnvModelCatalog:       string(catalog),
		lambdafn.EnvToolServers:        "https://tools.example.com, https://more.example.com/base",
		lambdafn.EnvCallbackURL:        "https://abc.lambda-url.us-east-1.on.aws/",
		lambdafn.EnvCallbackKeysSecret: "arn:aws:secretsmanager:us-east-1:1:secret:keys",
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
	// The per-thread bounds default as serve's do: the inherited-view
	// chain is folded past 8 ancestors, the rest uncapped.
	if c.MaxInheritedDepth != serverless.DefaultMaxInheritedDepth || c.MaxSubscriptions != 0 || c.MaxChildren != 0 {
		t.Fatalf("limits = %d %d %d, want %d 0 0", c.MaxInheritedDepth, c.MaxSubscriptions, c.MaxChildren, serverless.DefaultMaxInheritedDepth)
	}
	env := validSliceEnv(t)
	env[lambdafn.EnvMaxInheritedDepth], env[lambdafn.EnvMaxSubscriptions], env[lambdafn.EnvMaxChildren] = "3", "5", "7"
	if c, err = serverless.LoadSliceConfig(getenv(env)); err != nil || c.MaxInheritedDepth != 3 || c.MaxSubscriptions != 5 || c.MaxChildren != 7 {
		t.Fatalf("limits = %d %d %d (%v), want 3 5 7", c.MaxInheritedDepth, c.MaxSubscriptions, c.MaxChildren, err)
	}
}

func TestLoadSliceConfigAgents(t *testing.T) {
	t.Parallel()
	env := validSliceEnv(t)
	env[lambdafn.EnvAgents] = `{"agents":[{"name":"rev","instructions":"Review.","model":"scripted"},{"name":"w","instructions":"Write."}],"default_agent":"w"}`
	c, err := serverless.LoadSliceConfig(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Agents) != 2 || c.Agents[0].Instructions != "Review." || c.DefaultAgent != "w" || c.Catalog == nil {
		t.Fatalf("agents = %+v default %q", c.Agents, c.DefaultAgent)
	}
}

// Agents too large for the environment arrive as a file in the function's
// asset (internal/stack, agentsfile.go), named relative to LAMBDA_TASK_ROOT.
func TestLoadSliceConfigAgentsFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	doc := `{"agents":[{"name":"rev","instructions":"` + strings.Repeat("Review. ", 1000) + `","model":"scripted"}],"default_agent":"rev"}`
	if err := os.WriteFile(filepath.Join(root, "agents.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	env := validSliceEnv(t)
	env[lambdafn.EnvAgentsFile] = "agents.json"
	env[lambdafn.EnvTaskRoot] = root
	c, err := serverless.LoadSliceConfig(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Agents) != 1 || len(c.Agents[0].Instructions) != 8000 || c.DefaultAgent != "rev" {
		t.Fatalf("agents = %d, default %q", len(c.Agents), c.DefaultAgent)
	}
	if err := os.WriteFile(filepath.Join(root, "bad.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		change  map[string]string
		wantVar string
		want    string
	}{
		{"file missing", map[string]string{lambdafn.EnvAgentsFile: "nope.json"}, lambdafn.EnvAgentsFile, "nope.json"},
		{"both set", map[string]string{lambdafn.EnvAgents: `{"agents":[]}`}, lambdafn.EnvAgentsFile, "exactly one"},
		{"bad document", map[string]string{lambdafn.EnvAgentsFile: filepath.Join(root, "bad.json")}, lambdafn.EnvAgentsFile, "malformed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := validSliceEnv(t)
			env[lambdafn.EnvAgentsFile] = "agents.json"
			env[lambdafn.EnvTaskRoot] = root
			for k, v := range tt.change {
				env[k] = v
			}
			_, err := serverless.LoadSliceConfig(getenv(env))
			var ee *lambdafn.EnvError
			if !errors.As(err, &ee) || ee.Var != tt.wantVar || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want an *EnvError naming %s and saying %q", err, tt.wantVar, tt.want)
			}
		})
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
		{"input queue missing", map[string]string{lambdafn.EnvInputQueueURL: ""}, lambdafn.EnvInputQueueURL, "missing"},
		{"input queue not FIFO", map[string]string{lambdafn.EnvInputQueueURL: "https://sqs/1/in"}, lambdafn.EnvInputQueueURL, "not a FIFO"},
		{"input queue not a URL", map[string]string{lambdafn.EnvInputQueueURL: "in.fifo"}, lambdafn.EnvInputQueueURL, "absolute"},
		{"output queue FIFO", map[string]string{lambdafn.EnvOutputQueueURL: "https://sqs/1/out.fifo"}, lambdafn.EnvOutputQueueURL, "standard"},
		{"dlq missing", map[string]string{lambdafn.EnvDLQURL: ""}, lambdafn.EnvDLQURL, "missing"},
		{"delay queue missing", map[string]string{lambdafn.EnvDelayQueueURL: ""}, lambdafn.EnvDelayQueueURL, "missing"},
		{"dedup table missing", map[string]string{lambdafn.EnvDedupTable: ""}, lambdafn.EnvDedupTable, "missing"},
		{"no database", map[string]string{lambdafn.EnvDSQLEndpoint: ""}, lambdafn.EnvDSQLEndpoint, lambdafn.EnvPGDSN},
		{"two databases", map[string]string{lambdafn.EnvPGDSN: "postgres://x@h/db"}, lambdafn.EnvPGDSN, "exactly one"},
		{"no region for DSQL", map[string]string{lambdafn.EnvRegion: ""}, lambdafn.EnvRegion, "region"},
		{"scheduler role missing", map[string]string{lambdafn.EnvSchedulerRoleARN: ""}, lambdafn.EnvSchedulerRoleARN, "missing"},
		{"catalog missing", map[string]string{lambdafn.EnvModelCatalog: ""}, lambdafn.EnvModelCatalog, "missing"},
		{"catalog malformed", map[string]string{lambdafn.EnvModelCatalog: "{"}, lambdafn.EnvModelCatalog, "malformed"},
		{"unknown model", map[string]string{lambdafn.EnvModel: "gpt-9"}, lambdafn.EnvModel, "not in the catalog"},
		{"bad tool server", map[string]string{lambdafn.EnvToolServers: "https://ok.example.com,ftp://x"}, lambdafn.EnvToolServers, "entry 1"},
		{"callback URL missing", map[string]string{lambdafn.EnvCallbackURL: ""}, lambdafn.EnvCallbackURL, "missing"},
		{"no keys", map[string]string{lambdafn.EnvCallbackKeysSecret: ""}, lambdafn.EnvCallbackKeysSecret, lambdafn.EnvCallbackKeys},
		{"two key sources", map[string]string{lambdafn.EnvCallbackKeys: "k1:AAAA"}, lambdafn.EnvCallbackKeys, "exactly one"},
		{"bad margin", map[string]string{lambdafn.EnvSliceMargin: "soon"}, lambdafn.EnvSliceMargin, "duration"},
		{"negative children cap", map[string]string{lambdafn.EnvMaxChildren: "-1"}, lambdafn.EnvMaxChildren, "whole number"},
		{"subscriptions cap not a number", map[string]string{lambdafn.EnvMaxSubscriptions: "many"}, lambdafn.EnvMaxSubscriptions, "whole number"},
		{"zero inherited depth", map[string]string{lambdafn.EnvMaxInheritedDepth: "0"}, lambdafn.EnvMaxInheritedDepth, "at least 1"},
		{"bad log level", map[string]string{lambdafn.EnvLogLevel: "loud"}, lambdafn.EnvLogLevel, "log level"},
		{"bad provider wait", map[string]string{lambdafn.EnvProviderWait: "soon"}, lambdafn.EnvProviderWait, "duration"},
		{"zero provider wait cap", map[string]string{lambdafn.EnvProviderWaitMax: "0s"}, lambdafn.EnvProviderWaitMax, "not positive"},
		{"negative provider max wait", map[string]string{lambdafn.EnvProviderMaxWait: "-1h"}, lambdafn.EnvProviderMaxWait, "not positive"},
		{"agents malformed", map[string]string{lambdafn.EnvAgents: "{"}, lambdafn.EnvAgents, "malformed"},
		{"agent without instructions", map[string]string{lambdafn.EnvAgents: `{"agents":[{"name":"a","instructions":" "}]}`}, lambdafn.EnvAgents, `"agents[0].instructions"`},
		{"agent model not in catalog", map[string]string{lambdafn.EnvAgents: `{"agents":[{"name":"a","instructions":"x","model":"gpt-9"}]}`}, lambdafn.EnvAgents, `"agents[0].model"`},
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
			var ee *lambdafn.EnvError
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
	delete(env, lambdafn.EnvDSQLEndpoint)
	delete(env, lambdafn.EnvRegion)
	delete(env, lambdafn.EnvCallbackKeysSecret)
	delete(env, lambdafn.EnvToolServers)
	env[lambdafn.EnvPGDSN] = "postgres://agentslice@127.0.0.1:54329/agentslice"
	env[lambdafn.EnvCallbackKeys] = "k1:c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA"
	env[lambdafn.EnvSliceMargin] = "1500ms"
	env[lambdafn.EnvLogLevel] = "debug"
	c, err := serverless.LoadSliceConfig(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	if c.PGDSN == "" || c.DSQLEndpoint != "" || c.Keys.Inline == "" || c.ToolServers != nil || c.Margin != 1500*time.Millisecond {
		t.Fatalf("config = %+v", c)
	}
}

// TestLoadSliceConfigProviderWait: a provider outage is waited out through
// the timers by default (issue 27: no dead letter while the provider is
// down), the waits are configurable, and "off" restores dead-lettering.
func TestLoadSliceConfigProviderWait(t *testing.T) {
	t.Parallel()
	env := validSliceEnv(t)
	c, err := serverless.LoadSliceConfig(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	if w := c.ProviderWait; w == nil || *w != (runtime.ProviderWait{}).WithDefaults() {
		t.Fatalf("default provider wait = %+v, want runtime's defaults", w)
	}
	env[lambdafn.EnvProviderWait] = "2s"
	env[lambdafn.EnvProviderWaitMax] = "10s"
	env[lambdafn.EnvProviderMaxWait] = "1m"
	if c, err = serverless.LoadSliceConfig(getenv(env)); err != nil {
		t.Fatal(err)
	}
	if w := c.ProviderWait; w == nil || w.First != 2*time.Second || w.Interval != 10*time.Second || w.MaxWait != time.Minute {
		t.Fatalf("configured provider wait = %+v", w)
	}
	env[lambdafn.EnvProviderWait] = "off"
	if c, err = serverless.LoadSliceConfig(getenv(env)); err != nil || c.ProviderWait != nil {
		t.Fatalf("off: provider wait %+v, err %v", c.ProviderWait, err)
	}
}

// TestBuildSliceFunctionForDSQL builds the production wiring (DSQL with IAM
// tokens, keyring inline) without any service: building must not connect
// to anything, the pool must speak TLS to the cluster, and requests must be
// counted per slice.
func TestBuildSliceFunctionForDSQL(t *testing.T) {
	t.Parallel()
	env := validSliceEnv(t)
	delete(env, lambdafn.EnvCallbackKeysSecret)
	delete(env, lambdafn.EnvToolServers)
	env[lambdafn.EnvCallbackKeys] = "k1:c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA"
	cfg, err := serverless.LoadSliceConfig(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	awsCfg := awstest.Config()
	fn, err := serverless.BuildSliceFunction(context.Background(), cfg, lambdafn.Options{AWS: &awsCfg, Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer fn.Close()
	cc := fn.Pool.Config().ConnConfig
	if cc.Host != "abc.dsql.us-east-1.on.aws" || cc.Port != 5432 || cc.User != "admin" || cc.TLSConfig == nil ||
		cc.TLSConfig.ServerName != cc.Host || fn.Pool.Config().BeforeConnect == nil || cc.Tracer == nil {
		t.Fatalf("pool config: host %s:%d user %s tls %v tracer %v", cc.Host, cc.Port, cc.User, cc.TLSConfig != nil, cc.Tracer)
	}
	if st := fn.Pool.Stat(); st.TotalConns() != 0 {
		t.Fatalf("building opened %d connections; the first slice should", st.TotalConns())
	}
	if fn.Engine.Compaction == nil || fn.Engine.Dedup == nil || fn.Engine.Output == nil {
		t.Fatalf("engine %+v", fn.Engine)
	}
	// The per-thread bounds reach the engine (without them a deep chain of
	// children is never folded on AWS).
	if l := fn.Engine.Limits; l.MaxInheritedDepth != serverless.DefaultMaxInheritedDepth {
		t.Fatalf("engine limits %+v, want MaxInheritedDepth %d", l, serverless.DefaultMaxInheritedDepth)
	}
}
