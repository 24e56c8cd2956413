package model

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agentslice/agentslice/internal/runtime"
)

const goodCatalog = `{
  "default": "claude",
  "models": [
    {"name": "claude", "provider": "bedrock", "model_id": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
     "context_window": 200000, "max_output_tokens": 16000, "images": true, "concurrency": 50, "tokens_per_minute": 2000000,
     "bedrock": {"region": "us-west-2", "tool_result_status": true}},
    {"name": "local", "provider": "openai", "model_id": "qwen3:8b", "context_window": 32768, "max_output_tokens": 4096,
     "openai": {"base_url": "http://127.0.0.1:11434/v1", "api_key": "ollama", "max_tokens_field": "max_tokens"}}
  ]
}`

func TestDecodeCatalog(t *testing.T) {
	t.Parallel()
	c, err := DecodeCatalog([]byte(goodCatalog))
	if err != nil {
		t.Fatal(err)
	}
	def, err := c.Lookup("")
	if err != nil || def.Name != "claude" || def.Bedrock.Region != "us-west-2" || def.Concurrency != 50 || def.TokensPerMinute != 2000000 {
		t.Fatalf("default lookup: %+v, %v", def, err)
	}
	local, err := c.Lookup("local")
	if err != nil || local.OpenAI.BaseURL != "http://127.0.0.1:11434/v1" || local.Images {
		t.Fatalf("lookup local: %+v, %v", local, err)
	}
	if _, err := c.Lookup("gpt-9"); err == nil || !strings.Contains(err.Error(), "claude, local") {
		t.Errorf("lookup of an unknown name must list the known ones, got %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		json  string
		field string // the field the error must name
		says  string // and a word of its reason
	}{
		{"malformed", `{"default":`, "", "malformed JSON"},
		{"unknown field", `{"default":"a","models":[],"extra":1}`, "", "unknown field"},
		{"no models", `{"default":"a","models":[]}`, "models", "at least one"},
		{"missing name", `{"default":"a","models":[{"provider":"openai","model_id":"m","context_window":10,"max_output_tokens":5}]}`,
			"models[0].name", "missing"},
		{"duplicate name", `{"default":"a","models":[
			{"name":"a","provider":"openai","model_id":"m","context_window":10,"max_output_tokens":5},
			{"name":"a","provider":"openai","model_id":"n","context_window":10,"max_output_tokens":5}]}`, "models[1].name", "duplicate"},
		{"unknown provider", `{"default":"a","models":[{"name":"a","provider":"azure","model_id":"m","context_window":10,"max_output_tokens":5}]}`,
			"models[0].provider", `"azure"`},
		{"missing provider", `{"default":"a","models":[{"name":"a","model_id":"m","context_window":10,"max_output_tokens":5}]}`,
			"models[0].provider", "missing"},
		{"missing model id", `{"default":"a","models":[{"name":"a","provider":"openai","context_window":10,"max_output_tokens":5}]}`,
			"models[0].model_id", "missing"},
		{"zero context window", `{"default":"a","models":[{"name":"a","provider":"openai","model_id":"m","max_output_tokens":5}]}`,
			"models[0].context_window", "positive"},
		{"zero max output", `{"default":"a","models":[{"name":"a","provider":"openai","model_id":"m","context_window":10}]}`,
			"models[0].max_output_tokens", "positive"},
		{"output fills the window", `{"default":"a","models":[{"name":"a","provider":"openai","model_id":"m","context_window":10,"max_output_tokens":10}]}`,
			"models[0].max_output_tokens", "no room"},
		{"section of the other provider", `{"default":"a","models":[{"name":"a","provider":"openai","model_id":"m","context_window":10,"max_output_tokens":5,"bedrock":{}}]}`,
			"models[0].bedrock", "only applies"},
		{"bad base url", `{"default":"a","models":[{"name":"a","provider":"openai","model_id":"m","context_window":10,"max_output_tokens":5,"openai":{"base_url":"localhost:8000"}}]}`,
			"models[0].openai.base_url", "absolute"},
		{"key twice", `{"default":"a","models":[{"name":"a","provider":"openai","model_id":"m","context_window":10,"max_output_tokens":5,"openai":{"api_key":"k","api_key_env":"K"}}]}`,
			"models[0].openai.api_key", "one of them"},
		{"bad max tokens field", `{"default":"a","models":[{"name":"a","provider":"openai","model_id":"m","context_window":10,"max_output_tokens":5,"openai":{"max_tokens_field":"max_new_tokens"}}]}`,
			"models[0].openai.max_tokens_field", "max_new_tokens"},
		{"negative concurrency", `{"default":"a","models":[{"name":"a","provider":"sim","model_id":"m","context_window":10,"max_output_tokens":5,"concurrency":-1}]}`,
			"models[0].concurrency", "-1"},
		{"tokens per minute below one completion", `{"default":"a","models":[{"name":"a","provider":"sim","model_id":"m","context_window":10,"max_output_tokens":5,"tokens_per_minute":4}]}`,
			"models[0].tokens_per_minute", "less than one completion"},
		{"bad bedrock endpoint", `{"default":"a","models":[{"name":"a","provider":"bedrock","model_id":"m","context_window":10,"max_output_tokens":5,"bedrock":{"endpoint":"ftp://x"}}]}`,
			"models[0].bedrock.endpoint", "http"},
		{"missing default", `{"models":[{"name":"a","provider":"openai","model_id":"m","context_window":10,"max_output_tokens":5}]}`,
			"default", "missing"},
		{"unknown default", `{"default":"b","models":[{"name":"a","provider":"openai","model_id":"m","context_window":10,"max_output_tokens":5}]}`,
			"default", `"b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeCatalog([]byte(tt.json))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want a *ConfigError, got %v", err)
			}
			if ce.Field != tt.field || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q: field %q, want field %q mentioning %q", err, ce.Field, tt.field, tt.says)
			}
		})
	}
}

func TestDecodeConfig(t *testing.T) {
	t.Parallel()
	c, err := DecodeConfig([]byte(`{"provider":"openai","model_id":"gpt-x","context_window":100,"max_output_tokens":10}`))
	if err != nil || c.ModelID != "gpt-x" {
		t.Fatalf("%+v, %v", c, err)
	}
	if _, err := DecodeConfig([]byte(`{"provider":"openai","model_id":"gpt x","context_window":100,"max_output_tokens":10}`)); err == nil ||
		!strings.Contains(err.Error(), "white space") {
		t.Errorf("a model ID with a space must be refused, got %v", err)
	}
}

func TestFromConfigInfo(t *testing.T) {
	t.Parallel()
	c, err := DecodeCatalog([]byte(goodCatalog))
	if err != nil {
		t.Fatal(err)
	}
	awsCfg := aws.Config{Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}
	for _, m := range c.Models {
		mdl, err := FromConfig(context.Background(), m, WithAWSConfig(awsCfg))
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		info := mdl.(Described).Info()
		if info.Name != m.Name || info.ContextWindow != m.ContextWindow || info.MaxOutputTokens != m.MaxOutputTokens ||
			info.Images != m.Images || info.Provider != m.Provider || info.ModelID != m.ModelID {
			t.Errorf("Info() = %+v for %+v", info, m)
		}
	}
}

func TestFromConfigBedrockNeedsRegion(t *testing.T) {
	t.Parallel()
	cfg := Config{Name: "c", Provider: ProviderBedrock, ModelID: "m", ContextWindow: 10, MaxOutputTokens: 5}
	_, err := FromConfig(context.Background(), cfg, WithAWSConfig(aws.Config{}))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "bedrock.region" {
		t.Errorf("want a ConfigError on bedrock.region, got %v", err)
	}
}

func TestFromConfigValidates(t *testing.T) {
	t.Parallel()
	_, err := FromConfig(context.Background(), Config{Provider: ProviderOpenAI})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "model_id" {
		t.Errorf("want a ConfigError on model_id, got %v", err)
	}
}

func FuzzDecodeCatalog(f *testing.F) {
	f.Add([]byte(goodCatalog))
	f.Add([]byte(`{"default":"a","models":[{"name":"a","provider":"openai","model_id":"m","context_window":10,"max_output_tokens":5}]}`))
	f.Add([]byte(`{"models":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCatalog(b)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		// A catalog that decodes is usable: its default resolves and each
		// model validates on its own.
		if _, err := c.Lookup(""); err != nil {
			t.Fatalf("valid catalog, default does not resolve: %v", err)
		}
		for _, m := range c.Models {
			if err := m.Validate(); err != nil {
				t.Fatalf("valid catalog, model %q invalid alone: %v", m.Name, err)
			}
		}
	})
}

// ExampleDecodeCatalog shows how a deployment picks its model from
// configuration instead of a constant: decode the catalog (for example from
// an environment variable), look the model up by name, build it.
func ExampleDecodeCatalog() {
	cat, err := DecodeCatalog([]byte(`{
	  "default": "local",
	  "models": [{"name": "local", "provider": "openai", "model_id": "llama3.1:8b",
	              "context_window": 131072, "max_output_tokens": 4096,
	              "openai": {"base_url": "http://127.0.0.1:11434/v1"}}]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, _ := cat.Lookup("")
	m, err := FromConfig(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	info := m.(Described).Info()
	fmt.Println(info.Provider, info.ModelID, info.ContextWindow)
	// Output: openai llama3.1:8b 131072
}

func TestCatalogPrices(t *testing.T) {
	c, err := DecodeCatalog([]byte(`{"default":"a","models":[
		{"name":"a","provider":"openai","model_id":"m","context_window":1000,"max_output_tokens":100,
		 "price":{"input":3,"output":15,"cache_read":0.3,"cache_write":3.75}},
		{"name":"b","provider":"sim","model_id":"s","context_window":1000,"max_output_tokens":50}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := c.Price("")
	if !ok || p.Input != 3 || p.Output != 15 || p.MaxOutputTokens != 100 || !p.InputIncludesCached {
		t.Fatalf("price of the default = %+v, %v", p, ok)
	}
	// 1000 prompt tokens of which 400 cached, 200 out: 600*3 + 400*0.3 + 200*15 micro-dollars.
	if got := p.Cost(runtime.Usage{Input: 1000, Cached: 400, Output: 200}); got != 600*3+120+3000 {
		t.Fatalf("cost = %d micro-dollars", got)
	}
	if p, ok := c.Price("b"); ok || p.MaxOutputTokens != 50 {
		t.Fatalf("a model without prices: %+v, %v", p, ok)
	}
	_, err = DecodeCatalog([]byte(`{"default":"a","models":[{"name":"a","provider":"sim","model_id":"s",
		"context_window":1000,"max_output_tokens":50,"price":{"input":-1,"output":1}}]}`))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "models[0].price.input" {
		t.Fatalf("a negative price: %v", err)
	}
}
