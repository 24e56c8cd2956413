package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/stack"
)

// These tests never start jsii: readConfig takes the context as a function.

// The shipped deploy/agents.json is valid: what `make synth` validates.
func TestShippedAgentsFile(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	doc, err := readAgents(filepath.Join(root, DefaultAgents), os.ReadFile)
	if err != nil || !strings.Contains(doc, `"name":"researcher"`) || strings.Contains(doc, "instructions_file") {
		t.Fatalf("readAgents = %.200s, %v", doc, err)
	}
	catalog, err := os.ReadFile(filepath.Join(root, DefaultModelCatalog))
	if err != nil {
		t.Fatal(err)
	}
	p := stack.StackProps{ModelCatalog: string(catalog), Agents: doc}
	if _, err := p.Check(); err == nil || !strings.Contains(err.Error(), "BinDir") {
		t.Fatalf("Check() = %v, want only the missing BinDir (agents and catalog valid)", err)
	}
}

func TestReadConfig(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		DefaultModelCatalog: `{"default":"a"}`,
		"other.json":        `{"default":"b"}`,
		"ag/agents.json":    `{"agents":[{"name":"rev","instructions_file":"rev.md","model":"b"}]}`,
		"ag/rev.md":         "Review <code>.",
		"ag/bad.json":       `{"agents":[{"name":"rev","instructions":""}]}`,
		"ag/dup.json":       `{"agents":[{"name":"rev","instructions":"x"},{"name":"rev","instructions":"y"}],"default_agent":"rev"}`,
	}
	readFile := func(name string) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	tests := []struct {
		name    string
		ctx     map[string]any
		env     map[string]string
		check   func(t *testing.T, c config)
		wantErr string
	}{
		{name: "defaults", check: func(t *testing.T, c config) {
			want := config{stackName: DefaultStackName, props: stack.StackProps{ModelCatalog: `{"default":"a"}`, BinDir: DefaultBinDir}}
			if !reflect.DeepEqual(c, want) {
				t.Errorf("config = %+v, want %+v", c, want)
			}
		}},
		{name: "strings from -c", ctx: map[string]any{
			"stackName": "Dev", "toolServers": " https://a.example.com , https://b.example.com,",
			"modelCatalog": "other.json", "modelName": "b", "binDir": "out",
			"sliceBatchSize": "5", "maxConcurrency": "20", "callbackPrincipals": "arn:aws:iam::1:root",
			"retainData": "true", "budgetModels": "b, c",
			"receiverConcurrency": "-1", "alarmTopicArn": "arn:aws:sns:us-east-1:1:ops",
			"callbackBaseUrl": "https://d1.cloudfront.net/",
		}, check: func(t *testing.T, c config) {
			p := c.props
			if p.CallbackBaseURL != "https://d1.cloudfront.net/" {
				t.Errorf("CallbackBaseURL = %q", p.CallbackBaseURL)
			}
			if p.ReceiverConcurrency != stack.NoReservedConcurrency || p.AlarmTopicARN != "arn:aws:sns:us-east-1:1:ops" {
				t.Errorf("receiver concurrency %d, alarm topic %q", p.ReceiverConcurrency, p.AlarmTopicARN)
			}
			if !reflect.DeepEqual(p.BudgetModels, []string{"b", "c"}) {
				t.Errorf("budget models = %q", p.BudgetModels)
			}
			if c.stackName != "Dev" || p.ModelCatalog != `{"default":"b"}` || p.ModelName != "b" || p.BinDir != "out" ||
				p.SliceBatchSize != 5 || p.MaxConcurrency != 20 || !p.RetainData ||
				!reflect.DeepEqual(p.ToolServers, []string{"https://a.example.com", "https://b.example.com"}) ||
				!reflect.DeepEqual(p.CallbackPrincipals, []string{"arn:aws:iam::1:root"}) {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "typed values from cdk.json", ctx: map[string]any{
			"toolServers": []any{"https://a.example.com"}, "sliceBatchSize": float64(3), "retainData": false,
			"modelCatalog": `{"default":"inline"}`, "receiverConcurrency": float64(30),
		}, check: func(t *testing.T, c config) {
			p := c.props
			if p.ReceiverConcurrency != 30 {
				t.Errorf("ReceiverConcurrency = %d, want 30", p.ReceiverConcurrency)
			}
			if p.SliceBatchSize != 3 || p.RetainData || p.ModelCatalog != `{"default":"inline"}` ||
				!reflect.DeepEqual(p.ToolServers, []string{"https://a.example.com"}) {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "environment fallback", env: map[string]string{
			stack.EnvToolServers: "https://env.example.com", stack.EnvModel: "m", stack.EnvModelCatalog: `{"default":"env"}`,
		}, check: func(t *testing.T, c config) {
			p := c.props
			if p.ModelName != "m" || p.ModelCatalog != `{"default":"env"}` || !reflect.DeepEqual(p.ToolServers, []string{"https://env.example.com"}) {
				t.Errorf("config = %+v", c)
			}
		}},
		{name: "context wins over environment", ctx: map[string]any{"modelName": "ctx"}, env: map[string]string{stack.EnvModel: "env"},
			check: func(t *testing.T, c config) {
				if c.props.ModelName != "ctx" {
					t.Errorf("ModelName = %q, want ctx", c.props.ModelName)
				}
			}},
		{name: "agents file", ctx: map[string]any{"agents": "ag/agents.json"}, check: func(t *testing.T, c config) {
			if want := `{"agents":[{"name":"rev","instructions":"Review <code>.","model":"b"}]}`; c.props.Agents != want {
				t.Errorf("Agents = %s, want %s", c.props.Agents, want)
			}
		}},
		{name: "agents empty instructions", ctx: map[string]any{"agents": "ag/bad.json"}, wantErr: `context agents: ag/bad.json: field "agents[0].instructions": empty`},
		{name: "agents duplicate", ctx: map[string]any{"agents": "ag/dup.json"}, wantErr: `context agents: ag/dup.json: field "agents[1].name": defined twice`},
		{name: "agents file missing", ctx: map[string]any{"agents": "nope.json"}, wantErr: "context agents: reading the agents"},
		{name: "missing catalog file", ctx: map[string]any{"modelCatalog": "nope.json"}, wantErr: "context modelCatalog: reading the model catalog"},
		{name: "bad number", ctx: map[string]any{"maxConcurrency": "many"}, wantErr: `context maxConcurrency: "many" is not a whole number`},
		{name: "fractional number", ctx: map[string]any{"sliceBatchSize": 2.5}, wantErr: "context sliceBatchSize: 2.5 is not a whole number"},
		{name: "bad bool", ctx: map[string]any{"retainData": "maybe"}, wantErr: `context retainData: "maybe" is not true or false`},
		{name: "bad list item", ctx: map[string]any{"toolServers": []any{"https://a", 3.0}}, wantErr: "context toolServers[1]: want a string"},
		{name: "bad list", ctx: map[string]any{"callbackPrincipals": 7.0}, wantErr: "context callbackPrincipals: want a list"},
		{name: "bad string", ctx: map[string]any{"stackName": true}, wantErr: "context stackName: want a string"},
		{name: "options from -c", ctx: map[string]any{"treeBudgets": "true", "sharedTpm": "true",
			"otel": "OTEL_TRACES_SAMPLER=parentbased_traceidratio, OTEL_TRACES_SAMPLER_ARG=0.01,"}, check: func(t *testing.T, c config) {
			p := c.props
			want := map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01"}
			if !p.TreeBudgets || !p.SharedTPM || !reflect.DeepEqual(p.Telemetry, want) {
				t.Errorf("tree budgets %v, shared TPM %v, telemetry %v", p.TreeBudgets, p.SharedTPM, p.Telemetry)
			}
		}},
		{name: "otel object from cdk.json", ctx: map[string]any{"otel": map[string]any{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://o.example.com"}},
			check: func(t *testing.T, c config) {
				if c.props.Telemetry["OTEL_EXPORTER_OTLP_ENDPOINT"] != "https://o.example.com" || c.props.TreeBudgets || c.props.SharedTPM {
					t.Errorf("props = %+v", c.props)
				}
			}},
		{name: "bad otel pair", ctx: map[string]any{"otel": "OTEL_TRACES_SAMPLER"}, wantErr: `context otel: "OTEL_TRACES_SAMPLER" is not NAME=VALUE`},
		{name: "bad otel value", ctx: map[string]any{"otel": map[string]any{"OTEL_X": 1.0}}, wantErr: "context otel.OTEL_X: want a string"},
		{name: "bad otel", ctx: map[string]any{"otel": 1.0}, wantErr: "context otel: want an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			get := func(k string) any { return tt.ctx[k] }
			getenv := func(k string) string { return tt.env[k] }
			c, err := readConfig(get, getenv, readFile)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("readConfig() error = %v, want %q", err, tt.wantErr)
				}
				if tt.name == "missing catalog file" && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("error %v does not wrap fs.ErrNotExist", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("readConfig() error = %v", err)
			}
			tt.check(t, c)
		})
	}
}
