package stack

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/sqsq"
)

// testCatalog is a valid catalog with one Bedrock and one OpenAI model.
const testCatalog = `{
  "default": "sonnet",
  "models": [
    {"name": "sonnet", "provider": "bedrock", "model_id": "us.anthropic.claude-sonnet-4-20250514-v1:0",
     "context_window": 200000, "max_output_tokens": 8192},
    {"name": "local", "provider": "openai", "model_id": "qwen3", "context_window": 32768,
     "max_output_tokens": 4096, "openai": {"base_url": "https://llm.example.com/v1"}}
  ]
}`

// fakeBinDir writes a placeholder bootstrap for every function (the asset
// directories must exist at synth time; nothing runs them).
func fakeBinDir(dir string) error {
	for _, name := range Functions() {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			return err
		}
		body := "#!/bin/sh\n# placeholder " + name + " for stack tests\n"
		if err := os.WriteFile(filepath.Join(dir, name, "bootstrap"), []byte(body), 0o755); err != nil {
			return err
		}
	}
	return nil
}

func TestCheck(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	if err := fakeBinDir(bin); err != nil {
		t.Fatal(err)
	}
	good := func() StackProps {
		return StackProps{ModelCatalog: testCatalog, BinDir: bin, ToolServers: []string{"https://tools.example.com/rap"}}
	}
	tests := []struct {
		name      string
		edit      func(p *StackProps)
		wantField string // "" = valid
		wantIn    string
	}{
		{name: "valid", edit: func(p *StackProps) {}},
		{name: "valid full", edit: func(p *StackProps) {
			p.ModelName, p.SliceBatchSize, p.MaxConcurrency = "local", 1, 2
			p.CallbackPrincipals = []string{"arn:aws:iam::123456789012:root"}
		}},
		{name: "http tool server", edit: func(p *StackProps) { p.ToolServers = []string{"http://tools.example.com"} },
			wantField: "ToolServers[0]", wantIn: "absolute https URL"},
		{name: "relative tool server", edit: func(p *StackProps) { p.ToolServers = []string{"a", "tools.example.com"} },
			wantField: "ToolServers[0]", wantIn: "absolute https URL"},
		{name: "tool server with query", edit: func(p *StackProps) { p.ToolServers = []string{"https://t.example.com/?k=v"} },
			wantField: "ToolServers[0]", wantIn: "query"},
		{name: "tool server with comma", edit: func(p *StackProps) { p.ToolServers = []string{"https://t.example.com/a,b"} },
			wantField: "ToolServers[0]", wantIn: "comma"},
		{name: "no catalog", edit: func(p *StackProps) { p.ModelCatalog = " " }, wantField: "ModelCatalog", wantIn: "empty"},
		{name: "agent without instructions", edit: func(p *StackProps) { p.Agents = `{"agents":[{"name":"a","instructions":""}]}` },
			wantField: "Agents", wantIn: `field "agents[0].instructions"`},
		{name: "agent model not in catalog", edit: func(p *StackProps) { p.Agents = `{"agents":[{"name":"a","instructions":"x","model":"nope"}]}` },
			wantField: "Agents", wantIn: `field "agents[0].model"`},
		{name: "agent unknown field", edit: func(p *StackProps) { p.Agents = `{"agents":[{"name":"a","instrutions":"x"}]}` },
			wantField: "Agents", wantIn: `field "instrutions"`},
		{name: "unknown default agent", edit: func(p *StackProps) { p.Agents = `{"agents":[{"name":"a","instructions":"x"}],"default_agent":"b"}` },
			wantField: "Agents", wantIn: `field "default_agent"`},
		{name: "bad catalog", edit: func(p *StackProps) { p.ModelCatalog = `{"default":"x","models":[]}` },
			wantField: "ModelCatalog", wantIn: "models"},
		{name: "unknown model", edit: func(p *StackProps) { p.ModelName = "gpt-9" }, wantField: "ModelName", wantIn: "gpt-9"},
		{name: "batch too big", edit: func(p *StackProps) { p.SliceBatchSize = 11 }, wantField: "SliceBatchSize", wantIn: "1..10"},
		{name: "concurrency 1", edit: func(p *StackProps) { p.MaxConcurrency = 1 }, wantField: "MaxConcurrency", wantIn: "2..1000"},
		{name: "background concurrency 1", edit: func(p *StackProps) { p.BackgroundMaxConcurrency = 1 }, wantField: "BackgroundMaxConcurrency", wantIn: "2..1000"},
		{name: "background above interactive", edit: func(p *StackProps) { p.MaxConcurrency, p.BackgroundMaxConcurrency = 5, 6 },
			wantField: "BackgroundMaxConcurrency", wantIn: "above MaxConcurrency"},
		{name: "public and principals", edit: func(p *StackProps) {
			p.PublicCallbacks, p.CallbackPrincipals = true, []string{"arn:aws:iam::123456789012:root"}
		}, wantField: "CallbackPrincipals", wantIn: "PublicCallbacks"},
		{name: "bad principal", edit: func(p *StackProps) { p.CallbackPrincipals = []string{"123456789012"} },
			wantField: "CallbackPrincipals[0]", wantIn: "not an IAM principal ARN"},
		{name: "receiver concurrency and alarm topic", edit: func(p *StackProps) {
			p.ReceiverConcurrency, p.AlarmTopicARN = 1000, "arn:aws:sns:us-east-1:123456789012:ops"
		}},
		{name: "no receiver reservation", edit: func(p *StackProps) { p.PublicCallbacks, p.ReceiverConcurrency = true, NoReservedConcurrency }},
		{name: "receiver concurrency too high", edit: func(p *StackProps) { p.ReceiverConcurrency = 1001 },
			wantField: "ReceiverConcurrency", wantIn: "1..1000"},
		{name: "receiver concurrency negative", edit: func(p *StackProps) { p.ReceiverConcurrency = -2 },
			wantField: "ReceiverConcurrency", wantIn: "1..1000"},
		{name: "alarm topic not SNS", edit: func(p *StackProps) { p.AlarmTopicARN = "arn:aws:sqs:us-east-1:123456789012:q" },
			wantField: "AlarmTopicARN", wantIn: "not an SNS topic ARN"},
		{name: "alarm topic not an ARN", edit: func(p *StackProps) { p.AlarmTopicARN = "arn:" },
			wantField: "AlarmTopicARN", wantIn: "not an SNS topic ARN"},
		{name: "callback base", edit: func(p *StackProps) { p.CallbackBaseURL = "https://d111.cloudfront.net/" }},
		{name: "callback base without slash", edit: func(p *StackProps) { p.CallbackBaseURL = "https://d111.cloudfront.net/x" },
			wantField: "CallbackBaseURL", wantIn: `end in "/"`},
		{name: "callback base http", edit: func(p *StackProps) { p.CallbackBaseURL = "http://d111.cloudfront.net/" },
			wantField: "CallbackBaseURL", wantIn: "https"},
		{name: "callback base with query", edit: func(p *StackProps) { p.CallbackBaseURL = "https://d111.cloudfront.net/?a=b" },
			wantField: "CallbackBaseURL", wantIn: "query"},
		{name: "no bin dir", edit: func(p *StackProps) { p.BinDir = "" }, wantField: "BinDir", wantIn: "empty"},
		{name: "missing bootstrap", edit: func(p *StackProps) { p.BinDir = t.TempDir() }, wantField: "BinDir", wantIn: "slicefn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := good()
			tt.edit(&p)
			cat, err := p.Check()
			if tt.wantField == "" {
				if err != nil || cat == nil {
					t.Fatalf("Check() = %v, %v; want a catalog", cat, err)
				}
				return
			}
			var pe *PropsError
			if !errors.As(err, &pe) || pe.Field != tt.wantField || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("Check() error = %v, want a *PropsError for %s containing %q", err, tt.wantField, tt.wantIn)
			}
		})
	}
	t.Run("missing bootstrap is ErrMissingBootstrap", func(t *testing.T) {
		t.Parallel()
		p := good()
		p.BinDir = t.TempDir()
		if _, err := p.Check(); !errors.Is(err, ErrMissingBootstrap) {
			t.Fatalf("Check() error = %v, want ErrMissingBootstrap", err)
		}
	})
}

func TestEnvBudget(t *testing.T) {
	t.Parallel()
	if err := checkEnvBudget(strings.Repeat("x", 2000), "https://a.example.com", "m", ""); err != nil {
		t.Errorf("2 KB catalog: %v", err)
	}
	err := checkEnvBudget(strings.Repeat("x", 3500), "", "", "")
	var pe *PropsError
	if !errors.As(err, &pe) || pe.Field != "ModelCatalog" || !strings.Contains(err.Error(), "4096") {
		t.Errorf("3.5 KB catalog: error = %v, want a ModelCatalog PropsError naming the limit", err)
	}
}

// TestConstantsAgree pins the constants the stack shares with the packages
// the functions run.
func TestConstantsAgree(t *testing.T) {
	t.Parallel()
	if DSQLAppRole != dsql.AppRole {
		t.Errorf("the slice function connects as %q, migrate creates %q", DSQLAppRole, dsql.AppRole)
	}
	if DSQLReaderRole != dsql.ReaderRole {
		t.Errorf("the receiver connects as %q, migrate creates %q", DSQLReaderRole, dsql.ReaderRole)
	}
	if DedupKeyAttr != dedup.KeyAttr || DedupExpiryAttr != dedup.ExpiryAttr {
		t.Errorf("table attributes %q/%q, dedup uses %q/%q", DedupKeyAttr, DedupExpiryAttr, dedup.KeyAttr, dedup.ExpiryAttr)
	}
	if EnvTreeBudgets != lambdafn.EnvTreeBudgets || EnvSharedTPM != lambdafn.EnvSharedTPM {
		t.Errorf("the stack sets %s and %s, the slice function reads %s and %s", EnvTreeBudgets, EnvSharedTPM, lambdafn.EnvTreeBudgets, lambdafn.EnvSharedTPM)
	}
	if MaxMessageBytes != sqsq.SQSMaxMessageBytes {
		t.Errorf("MaxMessageBytes = %d, sqsq.SQSMaxMessageBytes = %d", MaxMessageBytes, sqsq.SQSMaxMessageBytes)
	}
}
