package server

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
)

// configFields returns the dotted JSON paths of the configuration file's
// fields ("limits.max_completions", "mcp_servers[].name"), recursing into
// nested objects except the model catalog and the agent definitions, whose
// own pages document them.
func configFields(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		path := prefix + name
		out = append(out, path)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		elem := ""
		if ft.Kind() == reflect.Slice {
			ft, elem = ft.Elem(), "[]"
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeOf(model.Catalog{}) && ft != reflect.TypeOf(AgentConfig{}) {
			out = append(out, configFields(ft, path+elem+".")...)
		}
	}
	return out
}

// TestConfigurationDocumentsEveryField: docs/configuration.md names every
// field of serve's configuration file (as `path`), so a new field cannot
// go undocumented.
func TestConfigurationDocumentsEveryField(t *testing.T) {
	page, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	fields := configFields(reflect.TypeOf(Config{}), "")
	if len(fields) < 20 {
		t.Fatalf("found only %v", fields)
	}
	for _, f := range fields {
		if !strings.Contains(string(page), "`"+f+"`") {
			t.Errorf("docs/configuration.md does not document the configuration field `%s`", f)
		}
	}
}

// TestDocsExampleConfigsValidate: the configuration files the docs tell
// readers to run (docs/examples/serve/{agents,budget,serve,coder}.json,
// docs/examples/forks/forks.json) load and validate, so a page's
// `serve -config` cannot point at a file the server refuses.
func TestDocsExampleConfigsValidate(t *testing.T) {
	for _, f := range []string{"serve/agents.json", "serve/budget.json", "serve/serve.json", "serve/coder.json", "forks/forks.json"} {
		t.Run(f, func(t *testing.T) {
			path, err := filepath.Abs("../../docs/examples/" + f)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			if f == "forks/forks.json" {
				// Its catalog's script paths are relative to the working
				// directory (the page runs serve in the example's
				// directory), unlike `script`, which LoadConfig resolves.
				t.Chdir(filepath.Dir(path))
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
