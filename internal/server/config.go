package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// The configuration of serve is split by concern: this file holds the
// document (Config), its decoding and the order of validation; the
// sections live beside it: config_listen.go (listen address, public URL,
// callbacks), store.go (stores), config_models.go and agents.go (models
// and agents), config_tools.go and sandbox_config.go (tools, MCP, the
// sandbox), config_limits.go (limits, freezing, compaction) and
// config_errors.go (the errors naming a field).

// Config is what `agentslice serve` runs. It is decoded from a JSON file
// (DecodeConfig, LoadConfig), adjusted by command-line flags, and checked by
// Validate. Durations are strings such as "30s" or "10m".
//
//	{
//	  "listen": "127.0.0.1:8080",
//	  "script": "agent.json",
//	  "tool_servers": ["http://127.0.0.1:9000"],
//	  "example_tools": {"get_time": true, "run_command": {"allow": ["ls", "date"]}},
//	  "mcp_servers": [{"name": "everything", "command": ["npx", "@modelcontextprotocol/server-everything"]}]
//	}
type Config struct {
	// Listen is the TCP address to serve on. Default 127.0.0.1:8080.
	Listen string `json:"listen,omitempty"`
	// PublicURL is the base URL tools reach this server at (callback URLs
	// and the in-process tool servers are under it). Default: http:// and
	// the address actually listened on (127.0.0.1 for an unspecified host).
	PublicURL string `json:"public_url,omitempty"`

	// Models is a model catalog (see internal/model); Model names the one
	// to run (default: the catalog's default).
	Models *model.Catalog `json:"models,omitempty"`
	Model  string         `json:"model,omitempty"`
	// Script is the path of a script for the scripted model (instead of a
	// catalog); in a file, relative to the file's directory. With neither
	// Models nor Script, the simulated model runs.
	Script string `json:"script,omitempty"`

	// ToolServers are base URLs of RAP tool servers.
	ToolServers []string `json:"tool_servers,omitempty"`
	// ExampleTools mounts the example tools in-process under /tools/examples.
	ExampleTools *ExampleTools `json:"example_tools,omitempty"`
	// MCPServers are MCP servers proxied as RAP toolsets, mounted in-process
	// under /tools/mcp/{name}.
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
	// Sandbox serves the sandbox toolset (package internal/rap/sandbox)
	// in-process under /tools/sandbox: a git worktree of Repo per thread.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// PassEnv names variables of serve's environment that MCP subprocesses
	// and run_command's commands (the example's and the sandbox's) get besides procenv.DefaultPass (PATH,
	// HOME, LANG, LC_*, TZ, TMPDIR, USER, LOGNAME, SHELL, TERM); a name
	// ending in * passes a prefix. Nothing else is inherited, and no
	// AGENTSLICE_* variable can be named.
	PassEnv []string `json:"pass_env,omitempty"`

	// CallbackKeys is the signing keyring of callback URLs,
	// "id:base64secret[,id:base64secret...]" (the first signs). When empty
	// a random key is generated at start: callback URLs handed out then do
	// not survive a restart. The environment variable
	// AGENTSLICE_CALLBACK_KEYS, when set, wins over the file.
	CallbackKeys string `json:"callback_keys,omitempty"`
	// CallbackTTL is how long a callback URL stays valid. Default 720h.
	CallbackTTL string `json:"callback_ttl,omitempty"`
	// AuthToken, when set, is required as "Authorization: Bearer <token>"
	// on the API and the in-process tool servers. Listening on anything but
	// loopback requires one. The environment variable AGENTSLICE_TOKEN,
	// when set, wins over the file.
	AuthToken string `json:"auth_token,omitempty"`

	// Store is where threads live: sqlite (default: durable, under Data),
	// memory (lost at exit) or postgres (history in PostgreSQL at DSN).
	Store string `json:"store,omitempty"`
	// Data is the data directory of the sqlite store (default
	// DefaultDataDir). Relative to the working directory.
	Data string `json:"data,omitempty"`
	// DSN is the postgres://… URL of the postgres store.
	DSN string `json:"dsn,omitempty"`
	// Agents are the agent definitions threads run as (see runtime.Agent);
	// DefaultAgent names the one used when a thread's first message names
	// none (optional with a single agent). Without agents, threads run
	// without instructions, with the configured model and every tool.
	Agents       []AgentConfig `json:"agents,omitempty"`
	DefaultAgent string        `json:"default_agent,omitempty"`

	Limits     Limits     `json:"limits"`
	Freeze     Freeze     `json:"freeze"`
	Compaction Compaction `json:"compaction"`
	// Backfill is the postgres store's background backfill of threads
	// written before schema version 5 (backfill.go).
	Backfill Backfill `json:"backfill"`
	// LogLevel is debug, info, warn or error. Default info.
	LogLevel string `json:"log_level,omitempty"`
}

// AgentConfig is one agent definition: runtime.Agent's fields, with the
// instructions inline or in a file (instructions_file; in a configuration
// file, relative to the file's directory), the same shape as an entry of
// deploy/agents.json. Its tools name toolsets: "threads" and "sleep"
// (built-in), "examples" (example_tools), an MCP server's name, or the name
// a tool server announces in its toolset document.
type AgentConfig = runtime.AgentDef

// MaxConfigBytes caps a configuration file.
const MaxConfigBytes = 4 << 20

// LoadConfig reads and decodes a configuration file. A relative script path
// is taken relative to the file's directory. It does not validate: flags may
// still change it (call Validate after).
func LoadConfig(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, &ConfigError{Source: path, Reason: err.Error()}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return Config{}, &ConfigError{Source: path, Reason: "reading: " + err.Error()}
	}
	cfg, err := DecodeConfig(b)
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.Source = path
	}
	if sb := cfg.Sandbox; err == nil && sb != nil {
		sb.relativeTo(filepath.Dir(path))
	}
	if err == nil && cfg.Script != "" && !filepath.IsAbs(cfg.Script) {
		cfg.Script = filepath.Join(filepath.Dir(path), cfg.Script)
	}
	if err == nil && cfg.Models != nil {
		for i := range cfg.Models.Models {
			if sc := cfg.Models.Models[i].Scripted; sc != nil && sc.Path != "" && !filepath.IsAbs(sc.Path) {
				sc.Path = filepath.Join(filepath.Dir(path), sc.Path)
			}
		}
	}
	for i := range cfg.Agents {
		if f := cfg.Agents[i].InstructionsFile; err == nil && f != "" && !filepath.IsAbs(f) {
			cfg.Agents[i].InstructionsFile = filepath.Join(filepath.Dir(path), f)
		}
	}
	return cfg, err
}

// DecodeConfig parses a JSON configuration strictly: unknown fields, wrong
// types and trailing data are *ConfigError values naming the field.
func DecodeConfig(b []byte) (Config, error) {
	var cfg Config
	if len(b) > MaxConfigBytes {
		return cfg, &ConfigError{Reason: fmt.Sprintf("%d bytes, more than the limit of %d", len(b), MaxConfigBytes)}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, jsonError(b, err)
	}
	if dec.More() {
		return Config{}, &ConfigError{Reason: "trailing data after the JSON object"}
	}
	return cfg, nil
}

// settings are the validated configuration with defaults applied.
type settings struct {
	listen, publicURL string
	model             model.Config
	callbackTTL       time.Duration
	keepAlive         time.Duration
	readTimeout       time.Duration
	timerHorizon      time.Duration        // 0: every timer armed at start
	checkpointRecords int                  // the sqlite store's disk.Options.SegmentRecords
	providerWait      runtime.ProviderWait // without Timers
	freezeEvery       time.Duration
	freezeIdle        time.Duration
	backfillPause     time.Duration
	commandTimeout    time.Duration
	sandboxTimeout    time.Duration
	sandboxBatch      time.Duration
	logLevel          slog.Level
	maxBody           int64
	eventBuffer       int
	maxListed         int
	store             storeSettings
	// agents are the definitions with their instructions read;
	// remoteToolsets maps toolset names agents allow that only a tool
	// server can announce to the field naming them (checked at Start).
	agents         []runtime.Agent
	defaultAgent   string
	remoteToolsets map[string]string
}

// Validate checks the configuration and returns a *ConfigError naming the
// first problem.
func (c *Config) Validate() error {
	_, err := c.resolve()
	return err
}

func (c *Config) resolve() (*settings, error) {
	s := &settings{}
	var err error
	if err = c.resolveListen(s); err != nil {
		return nil, err
	}
	if s.model, err = c.modelConfig(); err != nil {
		return nil, err
	}
	if err = c.resolveTools(s); err != nil {
		return nil, err
	}
	if s.store, err = c.resolveStore(); err != nil {
		return nil, err
	}
	if err = c.resolveAgents(s); err != nil {
		return nil, err
	}
	if err = c.resolveCallbacks(s); err != nil {
		return nil, err
	}
	if err = c.resolveLimits(s); err != nil {
		return nil, err
	}
	if s.logLevel, err = c.logLevel(); err != nil {
		return nil, err
	}
	return s, nil
}

// configErr is the *ConfigError of a field with a formatted reason.
func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// logLevel resolves log_level.
func (c *Config) logLevel() (slog.Level, error) {
	bad := configErr
	switch strings.ToLower(c.LogLevel) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	default:
		return slog.LevelInfo, bad("log_level", "unknown level %q (want debug, info, warn or error)", c.LogLevel)
	}
}

// LogLevelValue returns the configured log level (info when unset or
// invalid).
func (c *Config) LogLevelValue() slog.Level {
	if s, err := c.resolve(); err == nil {
		return s.logLevel
	}
	return slog.LevelInfo
}

func duration(field, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, &ConfigError{Field: field, Reason: fmt.Sprintf("%q is not a positive duration (for example \"30s\" or \"10m\")", v)}
	}
	return d, nil
}

func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}
