package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/procenv"
	"github.com/agentslice/agentslice/internal/runtime"
)

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

// ExampleTools selects the example tools served in-process.
type ExampleTools struct {
	GetTime    bool        `json:"get_time,omitempty"`
	RunCommand *RunCommand `json:"run_command,omitempty"`
}

// RunCommand configures the example run_command tool.
type RunCommand struct {
	// Allow lists the commands (argv[0] exactly) the tool may run; at
	// least one.
	Allow []string `json:"allow"`
	// Dir is the working directory of the commands. Default: the server's.
	Dir string `json:"dir,omitempty"`
	// Timeout kills a command that runs longer. Default 10m.
	Timeout string `json:"timeout,omitempty"`
}

// MCPServer is one MCP server to proxy: a subprocess speaking stdio
// (Command) or a Streamable HTTP endpoint (URL).
type MCPServer struct {
	// Name is the toolset's name (what agents' tools lists name) and
	// prefixes its tools: {name}__{tool} (see mcp.ToolName).
	Name    string   `json:"name"`
	Command []string `json:"command,omitempty"`
	URL     string   `json:"url,omitempty"`
	// Env are KEY=VALUE entries the subprocess gets besides the
	// variables pass_env lets through (an entry here wins); never an
	// AGENTSLICE_* variable.
	Env []string `json:"env,omitempty"`
	Dir string   `json:"dir,omitempty"`
	// MetaTools offers the server as two tools, {name}_list_tools and
	// {name}_invoke_tool, instead of one tool per MCP tool: for a server
	// with so many tools that their schemas would crowd the model's context.
	MetaTools bool `json:"meta_tools,omitempty"`
}

// Limits bound what the server does and accepts. Zero means the default.
type Limits struct {
	// MaxCompletions caps one slice's completions. Default 8.
	MaxCompletions int `json:"max_completions,omitempty"`
	// ModelAttempts is how often one completion is tried. Default 4.
	ModelAttempts int `json:"model_attempts,omitempty"`
	// MaxSubscriptions caps the subscriptions one thread keeps active at
	// once (runtime.Limits.MaxSubscriptions). Default 0: no cap.
	MaxSubscriptions int `json:"max_subscriptions,omitempty"`
	// SliceAttempts is how often a failing slice is retried before its
	// messages go to the dead letters. Default 5.
	SliceAttempts int `json:"slice_attempts,omitempty"`
	// MaxBodyBytes caps a request body of the API. Default 1 MiB.
	MaxBodyBytes int64 `json:"max_body_bytes,omitempty"`
	// EventBuffer is how many events one stream subscriber may lag behind
	// before it is dropped. Default 256.
	EventBuffer int `json:"event_buffer,omitempty"`
	// KeepAlive is the interval of keep-alive comments on event streams.
	// Default 15s.
	KeepAlive string `json:"keep_alive,omitempty"`
	// MaxThreadsListed caps the threads GET /threads returns. Default 10000.
	MaxThreadsListed int `json:"max_threads_listed,omitempty"`
	// ReadTimeout bounds reading one request, body included: a stalled
	// upload is cut after it. Default 30s.
	ReadTimeout string `json:"read_timeout,omitempty"`
	// ProviderWait is a thread's first wait for its model provider when
	// every attempt of a completion failed with a retryable error (refused,
	// 5xx, 429); the waits double up to ProviderWaitMax, at least the
	// provider's Retry-After. Default 30s and 15m.
	ProviderWait    string `json:"provider_wait,omitempty"`
	ProviderWaitMax string `json:"provider_wait_max,omitempty"`
	// ProviderMaxWait is how long a thread waits for its provider in all
	// before the completion fails for good (an error in history). Default
	// 24h.
	ProviderMaxWait string `json:"provider_max_wait,omitempty"`
}

// Freeze configures the periodic compression of idle threads' history.
type Freeze struct {
	Disabled bool `json:"disabled,omitempty"`
	// Every is how often the store is swept. Default 30s.
	Every string `json:"every,omitempty"`
	// Idle is how long a thread must not have committed to be frozen.
	// Default 60s.
	Idle string `json:"idle,omitempty"`
}

// Compaction configures context compaction.
type Compaction struct {
	Disabled bool `json:"disabled,omitempty"`
	// Threshold is the fraction of the context window at which a thread is
	// summarised. Default 0.8.
	Threshold float64 `json:"threshold,omitempty"`
}

// CallbackKeysEnv is the environment variable that overrides
// Config.CallbackKeys.
const CallbackKeysEnv = "AGENTSLICE_CALLBACK_KEYS"

// DefaultListen is the address served on when none is configured.
const DefaultListen = "127.0.0.1:8080"

// ConfigError reports a configuration that cannot work. Field is the JSON
// path at fault ("mcp_servers[1].command"), "" for the document as a whole.
type ConfigError struct {
	Source string // the file, "" when not from a file
	Field  string
	Reason string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.Source != "" {
		fmt.Fprintf(&b, " %s", e.Source)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

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

// jsonError turns an encoding/json error into a *ConfigError naming the
// field or the position.
func jsonError(b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := position(b, se.Offset)
		return &ConfigError{Reason: fmt.Sprintf("malformed JSON at line %d, column %d: %v", line, col, se)}
	case errors.As(err, &te):
		field := strings.ReplaceAll(te.Field, ".Agent.", ".") // AgentConfig embeds runtime.Agent
		if field == "" {
			return &ConfigError{Reason: fmt.Sprintf("want a JSON object, got %s", te.Value)}
		}
		return &ConfigError{Field: locate(b, strings.Split(field, "."), te.Value), Reason: fmt.Sprintf("want %s, got %s", typeName(te.Type.String()), te.Value)}
	case errors.Is(err, io.EOF):
		return &ConfigError{Reason: "empty document (want a JSON object)"}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &ConfigError{Reason: "malformed JSON: unexpected end of the document"}
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		key := strings.Trim(f, `"`)
		return &ConfigError{Field: locateKey(b, key), Reason: "unknown field (check the spelling against the documented fields)"}
	}
	return &ConfigError{Reason: msg}
}

// locate turns the dotted field of a JSON type error ("mcp_servers.command")
// into the full path of the offending value ("mcp_servers[1].command", or
// "mcp_servers[1].command[0]" for an element), the first value along that
// path whose JSON type is jsonType. It returns the dotted field when it
// finds none.
func locate(b []byte, segs []string, jsonType string) string {
	var root any
	if json.Unmarshal(b, &root) != nil {
		return strings.Join(segs, ".")
	}
	// The value itself first; elements of an array value only if no value
	// matches (a wrong element type).
	deep := false
	var walk func(v any, i int, path string) (string, bool)
	walk = func(v any, i int, path string) (string, bool) {
		if i == len(segs) && jsonTypeOf(v) == jsonType {
			return path, true
		}
		if arr, ok := v.([]any); ok && (i < len(segs) || deep) {
			for k, e := range arr {
				if p, ok := walk(e, i, fmt.Sprintf("%s[%d]", path, k)); ok {
					return p, true
				}
			}
			return "", false
		}
		obj, ok := v.(map[string]any)
		if !ok || i == len(segs) {
			return "", false
		}
		child, ok := obj[segs[i]]
		if !ok {
			return "", false
		}
		next := segs[i]
		if path != "" {
			next = path + "." + segs[i]
		}
		return walk(child, i+1, next)
	}
	if p, ok := walk(root, 0, ""); ok {
		return p
	}
	deep = true
	if p, ok := walk(root, 0, ""); ok {
		return p
	}
	return strings.Join(segs, ".")
}

// locateKey returns the full path of the first object key named key
// (an unknown field), or key when it finds none.
func locateKey(b []byte, key string) string {
	var root any
	if json.Unmarshal(b, &root) != nil {
		return key
	}
	var walk func(v any, path string) (string, bool)
	walk = func(v any, path string) (string, bool) {
		switch t := v.(type) {
		case map[string]any:
			if _, ok := t[key]; ok {
				if path == "" {
					return key, true
				}
				return path + "." + key, true
			}
			names := make([]string, 0, len(t))
			for k := range t {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				next := k
				if path != "" {
					next = path + "." + k
				}
				if p, ok := walk(t[k], next); ok {
					return p, true
				}
			}
		case []any:
			for i, e := range t {
				if p, ok := walk(e, fmt.Sprintf("%s[%d]", path, i)); ok {
					return p, true
				}
			}
		}
		return "", false
	}
	if p, ok := walk(root, ""); ok {
		return p
	}
	return key
}

func jsonTypeOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	}
	return "null"
}

func position(b []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := 0; i < int(off) && i < len(b); i++ {
		if b[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func typeName(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string", strings.HasSuffix(t, ".Provider"):
		return "a string"
	case t == "bool":
		return "true or false"
	}
	return "an object"
}

var mcpName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// settings are the validated configuration with defaults applied.
type settings struct {
	listen, publicURL string
	model             model.Config
	callbackTTL       time.Duration
	keepAlive         time.Duration
	readTimeout       time.Duration
	providerWait      runtime.ProviderWait // without Timers
	freezeEvery       time.Duration
	freezeIdle        time.Duration
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
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	s := &settings{listen: c.Listen}
	if s.listen == "" {
		s.listen = DefaultListen
	}
	if _, port, err := net.SplitHostPort(s.listen); err != nil || port == "" {
		return nil, bad("listen", "%q is not a host:port address (for example 127.0.0.1:8080 or :8080)", s.listen)
	}
	if c.PublicURL != "" {
		if err := checkBaseURL(c.PublicURL); err != nil {
			return nil, bad("public_url", "%v", err)
		}
		s.publicURL = strings.TrimRight(c.PublicURL, "/")
	}

	var err error
	if s.model, err = c.modelConfig(); err != nil {
		return nil, err
	}

	for i, u := range c.ToolServers {
		if err := checkBaseURL(u); err != nil {
			return nil, bad(fmt.Sprintf("tool_servers[%d]", i), "%v", err)
		}
	}
	if e := c.ExampleTools; e != nil && e.RunCommand != nil {
		rc := e.RunCommand
		if len(rc.Allow) == 0 {
			return nil, bad("example_tools.run_command.allow", "empty: list the commands run_command may run")
		}
		for i, a := range rc.Allow {
			if strings.TrimSpace(a) == "" {
				return nil, bad(fmt.Sprintf("example_tools.run_command.allow[%d]", i), "empty command")
			}
		}
		if s.commandTimeout, err = duration("example_tools.run_command.timeout", rc.Timeout, 10*time.Minute); err != nil {
			return nil, err
		}
	}
	if err := c.resolveSandbox(s); err != nil {
		return nil, err
	}
	for i, n := range c.PassEnv {
		if err := procenv.CheckName(n); err != nil {
			return nil, bad(fmt.Sprintf("pass_env[%d]", i), "%v", err)
		}
	}
	names := map[string]bool{}
	for i, m := range c.MCPServers {
		f := fmt.Sprintf("mcp_servers[%d]", i)
		if !mcpName.MatchString(m.Name) {
			return nil, bad(f+".name", "%q must be 1 to 100 characters of letters, digits, _ and -", m.Name)
		}
		if names[m.Name] {
			return nil, bad(f+".name", "%q is used twice", m.Name)
		}
		names[m.Name] = true
		if (len(m.Command) == 0) == (m.URL == "") {
			return nil, bad(f+".command", "set exactly one of command (a subprocess speaking stdio) and url (Streamable HTTP)")
		}
		if len(m.Command) > 0 && strings.TrimSpace(m.Command[0]) == "" {
			return nil, bad(f+".command[0]", "empty program name")
		}
		for j, e := range m.Env {
			k, _, ok := strings.Cut(e, "=")
			if !ok || k == "" {
				return nil, bad(fmt.Sprintf("%s.env[%d]", f, j), "%q is not KEY=VALUE", e)
			}
			if err := procenv.CheckName(k); err != nil {
				return nil, bad(fmt.Sprintf("%s.env[%d]", f, j), "%v", err)
			}
		}
		if m.URL != "" {
			if err := checkBaseURL(m.URL); err != nil {
				return nil, bad(f+".url", "%v", err)
			}
		}
	}

	if s.store, err = c.resolveStore(); err != nil {
		return nil, err
	}
	if err := c.resolveAgents(s); err != nil {
		return nil, err
	}

	if s.callbackTTL, err = duration("callback_ttl", c.CallbackTTL, 30*24*time.Hour); err != nil {
		return nil, err
	}
	l := c.Limits
	for _, v := range []struct {
		field string
		n     int64
	}{
		{"limits.max_completions", int64(l.MaxCompletions)}, {"limits.model_attempts", int64(l.ModelAttempts)},
		{"limits.slice_attempts", int64(l.SliceAttempts)}, {"limits.max_body_bytes", l.MaxBodyBytes},
		{"limits.event_buffer", int64(l.EventBuffer)}, {"limits.max_threads_listed", int64(l.MaxThreadsListed)},
		{"limits.max_subscriptions", int64(l.MaxSubscriptions)},
	} {
		if v.n < 0 {
			return nil, bad(v.field, "must not be negative (got %d; 0 means the default)", v.n)
		}
	}
	s.maxBody, s.eventBuffer, s.maxListed = orDefault(l.MaxBodyBytes, 1<<20), int(orDefault(int64(l.EventBuffer), 256)),
		int(orDefault(int64(l.MaxThreadsListed), 10000))
	if s.keepAlive, err = duration("limits.keep_alive", l.KeepAlive, 15*time.Second); err != nil {
		return nil, err
	}
	if s.readTimeout, err = duration("limits.read_timeout", l.ReadTimeout, 30*time.Second); err != nil {
		return nil, err
	}
	pw := &s.providerWait
	if pw.First, err = duration("limits.provider_wait", l.ProviderWait, runtime.ProviderWaitFirstDefault); err != nil {
		return nil, err
	}
	if pw.Interval, err = duration("limits.provider_wait_max", l.ProviderWaitMax, runtime.ProviderWaitIntervalDefault); err != nil {
		return nil, err
	}
	if pw.MaxWait, err = duration("limits.provider_max_wait", l.ProviderMaxWait, runtime.ProviderWaitMaxDefault); err != nil {
		return nil, err
	}
	if s.freezeEvery, err = duration("freeze.every", c.Freeze.Every, 30*time.Second); err != nil {
		return nil, err
	}
	if s.freezeIdle, err = duration("freeze.idle", c.Freeze.Idle, 60*time.Second); err != nil {
		return nil, err
	}
	if t := c.Compaction.Threshold; t < 0 || t >= 1 {
		return nil, bad("compaction.threshold", "%v is not a fraction between 0 and 1 (0 means the default 0.8)", t)
	}
	switch strings.ToLower(c.LogLevel) {
	case "", "info":
		s.logLevel = slog.LevelInfo
	case "debug":
		s.logLevel = slog.LevelDebug
	case "warn", "warning":
		s.logLevel = slog.LevelWarn
	case "error":
		s.logLevel = slog.LevelError
	default:
		return nil, bad("log_level", "unknown level %q (want debug, info, warn or error)", c.LogLevel)
	}
	return s, nil
}

// LogLevelValue returns the configured log level (info when unset or
// invalid).
func (c *Config) LogLevelValue() slog.Level {
	if s, err := c.resolve(); err == nil {
		return s.logLevel
	}
	return slog.LevelInfo
}

// modelConfig picks the model: the scripted model for Script, the named
// catalog entry, or the simulated model.
func (c *Config) modelConfig() (model.Config, error) {
	switch {
	case c.Script != "" && c.Models != nil:
		return model.Config{}, &ConfigError{Field: "script", Reason: "set together with models; use one of them"}
	case c.Script != "" && c.Model != "":
		return model.Config{}, &ConfigError{Field: "model", Reason: "names a catalog model but script is set and there is no catalog"}
	case c.Script != "":
		mc := model.Config{Name: "scripted", Provider: model.ProviderScripted, ModelID: "scripted",
			ContextWindow: 200000, MaxOutputTokens: 8192, Scripted: &model.ScriptedConfig{Path: c.Script}}
		if _, err := model.LoadScript(c.Script); err != nil {
			return model.Config{}, &ConfigError{Field: "script", Reason: err.Error()}
		}
		return mc, nil
	case c.Models != nil:
		if err := c.Models.Validate(); err != nil {
			return model.Config{}, prefixModelError(err)
		}
		mc, err := c.Models.Lookup(c.Model)
		if err != nil {
			var me *model.ConfigError
			if errors.As(err, &me) {
				return model.Config{}, &ConfigError{Field: "model", Reason: fmt.Sprintf("%q %s", me.Model, me.Reason)}
			}
			return model.Config{}, &ConfigError{Field: "model", Reason: err.Error()}
		}
		return mc, nil
	case c.Model != "":
		return model.Config{}, &ConfigError{Field: "model", Reason: fmt.Sprintf("names %q but there is no models catalog", c.Model)}
	}
	return model.Config{Name: "sim", Provider: model.ProviderSim, ModelID: "sim", ContextWindow: 200000, MaxOutputTokens: 8192}, nil
}

func prefixModelError(err error) error {
	var me *model.ConfigError
	if !errors.As(err, &me) {
		return &ConfigError{Field: "models", Reason: err.Error()}
	}
	field := "models"
	if me.Field != "" {
		field += "." + me.Field
	}
	reason := me.Reason
	if me.Model != "" {
		reason = fmt.Sprintf("model %q: %s", me.Model, me.Reason)
	}
	return &ConfigError{Field: field, Reason: reason}
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

func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", s, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q must not carry a query or fragment", s)
	}
	return nil
}
