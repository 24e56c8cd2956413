package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Provider names a model provider in configuration.
type Provider string

// The providers FromConfig knows.
const (
	ProviderBedrock Provider = "bedrock" // Amazon Bedrock, ConverseStream
	ProviderOpenAI  Provider = "openai"  // any OpenAI-compatible chat completions endpoint
	// ProviderSim is the simulated model (benchmarks, demos); ProviderScripted
	// replays a JSON script (tests, reproducible demos).
	ProviderSim      Provider = "sim"
	ProviderScripted Provider = "scripted"
)

// Config describes one model a deployment may run. It is decoded from JSON
// (DecodeConfig, DecodeCatalog) and checked by Validate; FromConfig turns it
// into a runtime.Model.
type Config struct {
	// Name is the model's key in a Catalog; optional for a lone Config.
	Name     string   `json:"name,omitempty"`
	Provider Provider `json:"provider"`
	// ModelID is what the provider calls the model: a Bedrock model ID,
	// inference profile ID or ARN; an OpenAI model name; a vLLM served name.
	ModelID string `json:"model_id"`
	// ContextWindow is the model's context size in tokens (input + output).
	ContextWindow int `json:"context_window"`
	// MaxOutputTokens caps one completion; it must be below ContextWindow.
	MaxOutputTokens int `json:"max_output_tokens"`
	// MinOutputTokensPerSecond is the slowest streaming rate to plan for
	// (worst case, not typical); 0 means DefaultMinOutputTokensPerSecond.
	// With MaxOutputTokens it bounds how long one completion may take
	// (WorstCaseCompletion), which sizes the AWS slice function's timeout.
	MinOutputTokensPerSecond float64 `json:"min_output_tokens_per_second,omitempty"`
	// Images says the model accepts images. When false, image parts of tool
	// results are replaced with a text placeholder.
	Images bool `json:"images,omitempty"`
	// Concurrency is the most calls to this model a deployment makes at
	// once (the provider's concurrency quota, or less); 0 means no bound.
	// The embedded scheduler waits rather than exceed it, and the default
	// number of concurrent slices is derived from it.
	Concurrency int `json:"concurrency,omitempty"`
	// TokensPerMinute is the most tokens (input + output) a minute the
	// deployment spends on this model; set it a little below the
	// provider's quota. 0 means no bound.
	TokensPerMinute int `json:"tokens_per_minute,omitempty"`
	// Price is what the model costs, in US dollars per million tokens;
	// budgets in dollars and the cost shown per thread use it. The figures
	// are the user's to keep current: providers change them, and they
	// differ by region and contract. nil: the model's cost counts as 0.
	Price *Price `json:"price,omitempty"`

	Bedrock  *BedrockConfig  `json:"bedrock,omitempty"`
	OpenAI   *OpenAIConfig   `json:"openai,omitempty"`
	Sim      *SimConfig      `json:"sim,omitempty"`
	Scripted *ScriptedConfig `json:"scripted,omitempty"`
}

// SimConfig configures the simulated model.
type SimConfig struct {
	Chunks   int    `json:"chunks,omitempty"`
	Tool     string `json:"tool,omitempty"`
	ToolArgs string `json:"tool_args,omitempty"`
}

// ScriptedConfig names the script a scripted model plays: a file, or the
// script inline.
type ScriptedConfig struct {
	Path   string          `json:"path,omitempty"`
	Script json.RawMessage `json:"script,omitempty"`
}

// BedrockConfig holds the Bedrock-only settings.
type BedrockConfig struct {
	// Region overrides the region of the AWS configuration (AWS_REGION).
	Region string `json:"region,omitempty"`
	// Endpoint overrides the bedrock-runtime endpoint (a VPC endpoint).
	Endpoint string `json:"endpoint,omitempty"`
	// ToolResultStatus sends toolResult.status ("success"/"error"). Only
	// some models accept the field (Anthropic Claude 3 and later, Amazon
	// Nova); for the others leave it false and error results are sent as
	// text starting with "error: ".
	ToolResultStatus bool `json:"tool_result_status,omitempty"`
	// PromptCache places cache points after the system prompt and after
	// the tool configuration, so later slices of a thread read them from
	// Bedrock's prompt cache. Only models with prompt caching accept them
	// (Anthropic Claude 3.5 Haiku / 3.7 Sonnet and later, Amazon Nova).
	PromptCache bool `json:"prompt_cache,omitempty"`
}

// OpenAIConfig holds the settings of an OpenAI-compatible endpoint.
type OpenAIConfig struct {
	// BaseURL is the API root, e.g. http://127.0.0.1:8000/v1 for vLLM or
	// http://127.0.0.1:11434/v1 for Ollama. Default: OpenAI's own API.
	BaseURL string `json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the API key. It is
	// read by FromConfig, so the key never sits in the configuration.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// APIKey is the key itself, for local servers that want a dummy one.
	// At most one of APIKey and APIKeyEnv may be set; with neither, no
	// Authorization header is sent.
	APIKey string `json:"api_key,omitempty"`
	// MaxTokensField is the request field carrying MaxOutputTokens:
	// "max_completion_tokens" (default, what OpenAI wants) or "max_tokens"
	// (older servers).
	MaxTokensField string `json:"max_tokens_field,omitempty"`
	// SystemRole is the role of the message carrying the agent's
	// instructions: "system" (default) or "developer" (OpenAI's reasoning
	// models).
	SystemRole string `json:"system_role,omitempty"`
}

// DefaultOpenAIBaseURL is used when OpenAIConfig.BaseURL is empty.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1/"

// ConfigError reports a configuration that cannot work. Field is the JSON
// path of the value at fault ("models[1].context_window"), "" for the
// document as a whole.
type ConfigError struct {
	Model  string // the model's name or ID, "" when unknown
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("model config")
	if e.Model != "" {
		fmt.Fprintf(&b, " %q", e.Model)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

func (c *Config) label() string {
	if c.Name != "" {
		return c.Name
	}
	return c.ModelID
}

// Validate checks c and returns a *ConfigError naming the first problem.
func (c *Config) Validate() error { return c.validate("") }

func (c *Config) validate(prefix string) error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Model: c.label(), Field: prefix + field, Reason: fmt.Sprintf(format, args...)}
	}
	switch c.Provider {
	case ProviderBedrock, ProviderOpenAI, ProviderSim, ProviderScripted:
	case "":
		return bad("provider", "missing (want %q or %q)", ProviderBedrock, ProviderOpenAI)
	default:
		return bad("provider", "unknown provider %q (want %q or %q)", c.Provider, ProviderBedrock, ProviderOpenAI)
	}
	if c.ModelID == "" {
		return bad("model_id", "missing")
	}
	if strings.IndexFunc(c.ModelID, unicode.IsSpace) >= 0 {
		return bad("model_id", "%q contains white space", c.ModelID)
	}
	if c.ContextWindow <= 0 {
		return bad("context_window", "must be a positive number of tokens (got %d)", c.ContextWindow)
	}
	if c.MaxOutputTokens <= 0 {
		return bad("max_output_tokens", "must be a positive number of tokens (got %d)", c.MaxOutputTokens)
	}
	if c.MaxOutputTokens >= c.ContextWindow {
		return bad("max_output_tokens", "%d leaves no room for input in a context window of %d", c.MaxOutputTokens, c.ContextWindow)
	}
	if c.Concurrency < 0 {
		return bad("concurrency", "must be 0 (no bound) or a positive number of calls (got %d)", c.Concurrency)
	}
	if c.TokensPerMinute < 0 {
		return bad("tokens_per_minute", "must be 0 (no bound) or a positive number of tokens (got %d)", c.TokensPerMinute)
	}
	if c.TokensPerMinute > 0 && c.TokensPerMinute < c.MaxOutputTokens {
		return bad("tokens_per_minute", "%d is less than one completion's max_output_tokens %d", c.TokensPerMinute, c.MaxOutputTokens)
	}
	if r := c.MinOutputTokensPerSecond; r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return bad("min_output_tokens_per_second", "must be a positive rate, or 0 for the default %v (got %v)", DefaultMinOutputTokensPerSecond, r)
	}
	if p := c.Price; p != nil {
		for _, f := range []struct {
			name string
			v    float64
		}{{"input", p.Input}, {"output", p.Output}, {"cache_read", p.CacheRead}, {"cache_write", p.CacheWrite}} {
			if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				return bad("price."+f.name, "must be a non-negative number of US dollars per million tokens (got %v)", f.v)
			}
		}
	}
	if c.Provider != ProviderBedrock && c.Bedrock != nil {
		return bad("bedrock", "set for provider %q; it only applies to %q", c.Provider, ProviderBedrock)
	}
	if c.Provider != ProviderOpenAI && c.OpenAI != nil {
		return bad("openai", "set for provider %q; it only applies to %q", c.Provider, ProviderOpenAI)
	}
	if c.Provider != ProviderSim && c.Sim != nil {
		return bad("sim", "set for provider %q; it only applies to %q", c.Provider, ProviderSim)
	}
	if c.Provider == ProviderScripted {
		if sc := c.Scripted; sc == nil || (sc.Path == "") == (len(sc.Script) == 0) {
			return bad("scripted", "set exactly one of scripted.path and scripted.script")
		}
	} else if c.Scripted != nil {
		return bad("scripted", "set for provider %q; it only applies to %q", c.Provider, ProviderScripted)
	}
	if b := c.Bedrock; b != nil && b.Endpoint != "" {
		if err := checkURL(b.Endpoint); err != nil {
			return bad("bedrock.endpoint", "%v", err)
		}
	}
	if o := c.OpenAI; o != nil {
		if o.BaseURL != "" {
			if err := checkURL(o.BaseURL); err != nil {
				return bad("openai.base_url", "%v", err)
			}
		}
		if o.APIKey != "" && o.APIKeyEnv != "" {
			return bad("openai.api_key", "set together with openai.api_key_env; set one of them")
		}
		switch o.SystemRole {
		case "", "system", "developer":
		default:
			return bad("openai.system_role", "unknown role %q (want \"system\" or \"developer\")", o.SystemRole)
		}
		switch o.MaxTokensField {
		case "", "max_completion_tokens", "max_tokens":
		default:
			return bad("openai.max_tokens_field", "unknown field %q (want \"max_completion_tokens\" or \"max_tokens\")", o.MaxTokensField)
		}
	}
	return nil
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// Catalog is the set of models a deployment may run, with the one used when
// none is named.
type Catalog struct {
	Default string   `json:"default"`
	Models  []Config `json:"models"`
}

// Validate checks every model, that names are present and unique, and that
// Default names one of them.
func (c *Catalog) Validate() error {
	if len(c.Models) == 0 {
		return &ConfigError{Field: "models", Reason: "empty: the catalog needs at least one model"}
	}
	seen := map[string]bool{}
	for i := range c.Models {
		m := &c.Models[i]
		prefix := fmt.Sprintf("models[%d].", i)
		if m.Name == "" {
			return &ConfigError{Model: m.ModelID, Field: prefix + "name", Reason: "missing (catalog entries are looked up by name)"}
		}
		if seen[m.Name] {
			return &ConfigError{Model: m.Name, Field: prefix + "name", Reason: "duplicate name"}
		}
		seen[m.Name] = true
		if err := m.validate(prefix); err != nil {
			return err
		}
	}
	if c.Default == "" {
		return &ConfigError{Field: "default", Reason: "missing: name the model to use when none is asked for"}
	}
	if !seen[c.Default] {
		return &ConfigError{Field: "default", Reason: fmt.Sprintf("%q is not the name of a model in the catalog", c.Default)}
	}
	return nil
}

// Lookup returns the model named name, or the default when name is "".
func (c *Catalog) Lookup(name string) (Config, error) {
	if name == "" {
		name = c.Default
	}
	for _, m := range c.Models {
		if m.Name == name {
			return m, nil
		}
	}
	names := make([]string, len(c.Models))
	for i, m := range c.Models {
		names[i] = m.Name
	}
	return Config{}, &ConfigError{Model: name, Reason: "not in the catalog (have: " + strings.Join(names, ", ") + ")"}
}

// DecodeConfig parses and validates one JSON-encoded Config. Unknown fields
// are errors, so a typo does not silently fall back to a default.
func DecodeConfig(b []byte) (Config, error) {
	var c Config
	if err := decodeStrict(b, &c); err != nil {
		return Config{}, err
	}
	return c, c.Validate()
}

// DecodeCatalog parses and validates a JSON-encoded Catalog.
func DecodeCatalog(b []byte) (*Catalog, error) {
	var c Catalog
	if err := decodeStrict(b, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &ConfigError{Reason: "malformed JSON: " + err.Error()}
	}
	if dec.More() {
		return &ConfigError{Reason: "trailing data after the JSON object"}
	}
	return nil
}

// Info is what a deployment knows about the model it runs.
type Info struct {
	Name            string
	Provider        Provider
	ModelID         string
	ContextWindow   int
	MaxOutputTokens int
	Images          bool
	Concurrency     int
	TokensPerMinute int
}

// Described is implemented by every model FromConfig returns, so callers
// (compaction, metrics) can read the context window without a type switch.
type Described interface {
	Info() Info
}

func infoOf(c *Config) Info {
	return Info{Name: c.Name, Provider: c.Provider, ModelID: c.ModelID, ContextWindow: c.ContextWindow,
		MaxOutputTokens: c.MaxOutputTokens, Images: c.Images, Concurrency: c.Concurrency, TokensPerMinute: c.TokensPerMinute}
}

// Option adjusts how FromConfig builds a model.
type Option func(*options)

type options struct {
	httpClient *http.Client
	awsConfig  *aws.Config
	getenv     func(string) string
}

// WithHTTPClient makes the provider use c (timeouts, proxies, tests).
func WithHTTPClient(c *http.Client) Option { return func(o *options) { o.httpClient = c } }

// WithAWSConfig gives the Bedrock provider a ready AWS configuration instead
// of loading the default one (environment, shared files, instance role).
func WithAWSConfig(cfg aws.Config) Option { return func(o *options) { o.awsConfig = &cfg } }

// WithGetenv replaces os.Getenv for reading OpenAIConfig.APIKeyEnv.
func WithGetenv(f func(string) string) Option { return func(o *options) { o.getenv = f } }

// FromConfig validates cfg and builds the model it describes. The returned
// model also implements Described.
func FromConfig(ctx context.Context, cfg Config, opts ...Option) (runtime.Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{getenv: os.Getenv}
	for _, f := range opts {
		f(&o)
	}
	switch cfg.Provider {
	case ProviderBedrock:
		return newBedrock(ctx, cfg, &o)
	case ProviderOpenAI:
		return newOpenAI(cfg, &o)
	case ProviderSim:
		sim := &Sim{Reply: DemoReply}
		if c := cfg.Sim; c != nil {
			sim.Chunks, sim.Tool, sim.ToolArgs = c.Chunks, c.Tool, c.ToolArgs
		}
		return sim, nil
	case ProviderScripted:
		var script *Script
		var err error
		if cfg.Scripted.Path != "" {
			script, err = LoadScript(cfg.Scripted.Path)
		} else {
			script, err = ParseScript(cfg.Scripted.Script)
		}
		if err != nil {
			return nil, &ConfigError{Model: cfg.label(), Field: "scripted", Reason: err.Error()}
		}
		return NewScripted(script), nil
	}
	return nil, &ConfigError{Model: cfg.label(), Field: "provider", Reason: fmt.Sprintf("unknown provider %q", cfg.Provider)}
}
