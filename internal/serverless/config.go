package serverless

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/model"
)

// The environment variables the functions read. The CDK stack
// (internal/stack) provisions exactly these names.
const (
	EnvInputQueueURL      = "AGENTSLICE_INPUT_QUEUE_URL"      // FIFO input queue (all three functions)
	EnvDLQURL             = "AGENTSLICE_DLQ_URL"              // the input queue's dead-letter queue
	EnvOutputQueueURL     = "AGENTSLICE_OUTPUT_QUEUE_URL"     // standard output queue
	EnvDelayQueueURL      = "AGENTSLICE_DELAY_QUEUE_URL"      // standard delay queue (sleeps up to 900 s)
	EnvDedupTable         = "AGENTSLICE_DEDUP_TABLE"          // DynamoDB processed-ID table
	EnvDSQLEndpoint       = "AGENTSLICE_DSQL_ENDPOINT"        // Aurora DSQL cluster host name (IAM auth)
	EnvPGDSN              = "AGENTSLICE_PG_DSN"               // plain PostgreSQL instead of DSQL (local runs only)
	EnvSchedulerRoleARN   = "AGENTSLICE_SCHEDULER_ROLE_ARN"   // role EventBridge Scheduler assumes
	EnvScheduleGroup      = "AGENTSLICE_SCHEDULE_GROUP"       // schedule group of long sleeps (optional)
	EnvModelCatalog       = "AGENTSLICE_MODEL_CATALOG"        // model catalog JSON (model.DecodeCatalog)
	EnvModel              = "AGENTSLICE_MODEL"                // model name in the catalog (optional: its default)
	EnvToolServers        = "AGENTSLICE_TOOL_SERVERS"         // comma-separated RAP base URLs (may be empty)
	EnvCallbackURL        = "AGENTSLICE_CALLBACK_URL"         // the rapreceiver Function URL
	EnvCallbackKeysSecret = "AGENTSLICE_CALLBACK_KEYS_SECRET" // Secrets Manager secret holding the keyring
	EnvCallbackKeys       = "AGENTSLICE_CALLBACK_KEYS"        // the keyring itself (local runs)

	// Optional tuning; the stack need not set them.
	EnvDSQLUser    = "AGENTSLICE_DSQL_USER"    // database role, default "admin"
	EnvSliceMargin = "AGENTSLICE_SLICE_MARGIN" // Go duration kept free before the invocation deadline
	EnvLogLevel    = "AGENTSLICE_LOG_LEVEL"    // debug, info, warn, error
	EnvRegion      = "AWS_REGION"              // set by Lambda; signs DSQL tokens
)

// DefaultMargin is kept free between the end of the slice and the Lambda
// deadline, for dead-letter sends and the reply to Lambda.
const DefaultMargin = 3 * time.Second

// DefaultDSQLUser is the database role the slice function connects as.
const DefaultDSQLUser = "admin"

// EnvError names an environment variable that is missing or wrong.
type EnvError struct {
	Var    string
	Reason string
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("serverless: environment variable %s: %s", e.Var, e.Reason)
}

// KeySource says where the callback keyring comes from: exactly one of
// SecretARN (production) and Inline (local runs) is set.
type KeySource struct {
	SecretARN string
	Inline    string
}

// SliceConfig is the slice function's configuration.
type SliceConfig struct {
	InputQueueURL, DLQURL, OutputQueueURL, DelayQueueURL string
	DedupTable                                           string
	// Exactly one of DSQLEndpoint and PGDSN is set.
	DSQLEndpoint, DSQLUser, Region  string
	PGDSN                           string
	SchedulerRoleARN, ScheduleGroup string
	Model                           model.Config
	ToolServers                     []string
	CallbackURL                     string
	Keys                            KeySource
	Margin                          time.Duration
	LogLevel                        slog.Level
}

// ReceiverConfig is the callback receiver's configuration.
type ReceiverConfig struct {
	InputQueueURL string
	Keys          KeySource
	LogLevel      slog.Level
}

// RelayConfig is the delay relay's configuration.
type RelayConfig struct {
	InputQueueURL string
	LogLevel      slog.Level
}

// env reads variables and remembers the first problem, so a loader reads
// top to bottom and reports the first variable at fault.
type env struct {
	get func(string) string
	err error
}

func (e *env) fail(name, format string, args ...any) {
	if e.err == nil {
		e.err = &EnvError{Var: name, Reason: fmt.Sprintf(format, args...)}
	}
}

func (e *env) opt(name string) string { return strings.TrimSpace(e.get(name)) }

func (e *env) must(name, what string) string {
	v := e.opt(name)
	if v == "" {
		e.fail(name, "missing (%s)", what)
	}
	return v
}

func (e *env) queueURL(name, what string, fifo bool) string {
	v := e.must(name, what)
	if v == "" {
		return ""
	}
	if err := checkHTTPURL(v); err != nil {
		e.fail(name, "%v", err)
		return v
	}
	switch {
	case fifo && !strings.HasSuffix(v, ".fifo"):
		e.fail(name, "%q is not a FIFO queue URL (the name must end in .fifo)", v)
	case !fifo && strings.HasSuffix(v, ".fifo"):
		e.fail(name, "%q is a FIFO queue; this must be a standard queue", v)
	}
	return v
}

func (e *env) keys() KeySource {
	k := KeySource{SecretARN: e.opt(EnvCallbackKeysSecret), Inline: e.opt(EnvCallbackKeys)}
	switch {
	case k.SecretARN == "" && k.Inline == "":
		e.fail(EnvCallbackKeysSecret, "missing: set it to the Secrets Manager secret holding the callback keyring (or, for local runs only, set %s to the keyring)", EnvCallbackKeys)
	case k.SecretARN != "" && k.Inline != "":
		e.fail(EnvCallbackKeys, "set together with %s; set exactly one of them", EnvCallbackKeysSecret)
	}
	return k
}

func (e *env) logLevel() slog.Level {
	var l slog.Level
	v := e.opt(EnvLogLevel)
	if v == "" {
		return slog.LevelInfo
	}
	if err := l.UnmarshalText([]byte(v)); err != nil {
		e.fail(EnvLogLevel, "%q is not a log level (debug, info, warn, error)", v)
	}
	return l
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// LoadSliceConfig reads the slice function's configuration with getenv
// (os.Getenv in main). The first variable that is missing or wrong is
// reported as an *EnvError.
func LoadSliceConfig(getenv func(string) string) (SliceConfig, error) {
	e := &env{get: getenv}
	c := SliceConfig{
		InputQueueURL:    e.queueURL(EnvInputQueueURL, "the FIFO input queue URL", true),
		DLQURL:           e.must(EnvDLQURL, "the input queue's dead-letter queue URL"),
		OutputQueueURL:   e.queueURL(EnvOutputQueueURL, "the standard output queue URL", false),
		DelayQueueURL:    e.queueURL(EnvDelayQueueURL, "the standard delay queue URL", false),
		DedupTable:       e.must(EnvDedupTable, "the DynamoDB table of processed message IDs"),
		DSQLEndpoint:     e.opt(EnvDSQLEndpoint),
		PGDSN:            e.opt(EnvPGDSN),
		SchedulerRoleARN: e.must(EnvSchedulerRoleARN, "the IAM role EventBridge Scheduler assumes to send wake-ups"),
		ScheduleGroup:    e.opt(EnvScheduleGroup),
		CallbackURL:      e.must(EnvCallbackURL, "the callback receiver's Function URL"),
		Keys:             e.keys(),
		Margin:           DefaultMargin,
		LogLevel:         e.logLevel(),
	}
	if c.DLQURL != "" {
		if err := checkHTTPURL(c.DLQURL); err != nil {
			e.fail(EnvDLQURL, "%v", err)
		}
	}
	switch {
	case c.DSQLEndpoint == "" && c.PGDSN == "":
		e.fail(EnvDSQLEndpoint, "missing (the Aurora DSQL cluster host name; for local runs only, set %s instead)", EnvPGDSN)
	case c.DSQLEndpoint != "" && c.PGDSN != "":
		e.fail(EnvPGDSN, "set together with %s; set exactly one of them", EnvDSQLEndpoint)
	case c.DSQLEndpoint != "":
		c.DSQLUser = e.opt(EnvDSQLUser)
		if c.DSQLUser == "" {
			c.DSQLUser = DefaultDSQLUser
		}
		c.Region = e.must(EnvRegion, "the AWS region, needed to sign DSQL auth tokens")
	}
	if c.CallbackURL != "" {
		if err := checkHTTPURL(c.CallbackURL); err != nil {
			e.fail(EnvCallbackURL, "%v", err)
		}
	}
	for i, s := range strings.Split(e.opt(EnvToolServers), ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if err := checkHTTPURL(s); err != nil {
			e.fail(EnvToolServers, "entry %d: %v", i, err)
		}
		c.ToolServers = append(c.ToolServers, s)
	}
	if v := e.opt(EnvSliceMargin); v != "" {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			e.fail(EnvSliceMargin, "%q is not a duration such as 3s", v)
		case d < 0:
			e.fail(EnvSliceMargin, "%v is negative", d)
		default:
			c.Margin = d
		}
	}
	if raw := e.must(EnvModelCatalog, "the model catalog JSON"); raw != "" && e.err == nil {
		cat, err := model.DecodeCatalog([]byte(raw))
		if err != nil {
			e.fail(EnvModelCatalog, "%v", err)
		} else if c.Model, err = cat.Lookup(e.opt(EnvModel)); err != nil {
			e.fail(EnvModel, "%v", err)
		}
	}
	if e.err != nil {
		return SliceConfig{}, e.err
	}
	return c, nil
}

// LoadReceiverConfig reads the callback receiver's configuration.
func LoadReceiverConfig(getenv func(string) string) (ReceiverConfig, error) {
	e := &env{get: getenv}
	c := ReceiverConfig{
		InputQueueURL: e.queueURL(EnvInputQueueURL, "the FIFO input queue URL", true),
		Keys:          e.keys(),
		LogLevel:      e.logLevel(),
	}
	if e.err != nil {
		return ReceiverConfig{}, e.err
	}
	return c, nil
}

// LoadRelayConfig reads the delay relay's configuration.
func LoadRelayConfig(getenv func(string) string) (RelayConfig, error) {
	e := &env{get: getenv}
	c := RelayConfig{
		InputQueueURL: e.queueURL(EnvInputQueueURL, "the FIFO input queue URL", true),
		LogLevel:      e.logLevel(),
	}
	if e.err != nil {
		return RelayConfig{}, e.err
	}
	return c, nil
}
