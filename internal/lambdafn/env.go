package lambdafn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentslice/agentslice/internal/otelx"
	"github.com/agentslice/agentslice/internal/rap"
)

// The environment variables of the functions. The CDK stack
// (internal/stack) provisions exactly these names.
const (
	EnvInputQueueURL      = "AGENTSLICE_INPUT_QUEUE_URL"      // FIFO input queue (all three functions)
	EnvBackgroundQueueURL = "AGENTSLICE_BACKGROUND_QUEUE_URL" // FIFO input queue of background threads (optional)
	EnvDLQURL             = "AGENTSLICE_DLQ_URL"              // the input queue's dead-letter queue
	EnvOutputQueueURL     = "AGENTSLICE_OUTPUT_QUEUE_URL"     // standard output queue
	EnvDelayQueueURL      = "AGENTSLICE_DELAY_QUEUE_URL"      // standard delay queue (sleeps up to 900 s)
	EnvDedupTable         = "AGENTSLICE_DEDUP_TABLE"          // DynamoDB processed-ID table
	EnvDSQLEndpoint       = "AGENTSLICE_DSQL_ENDPOINT"        // Aurora DSQL cluster host name (IAM auth)
	EnvPGDSN              = "AGENTSLICE_PG_DSN"               // plain PostgreSQL instead of DSQL (local runs only)
	EnvSchedulerRoleARN   = "AGENTSLICE_SCHEDULER_ROLE_ARN"   // role EventBridge Scheduler assumes
	EnvScheduleGroup      = "AGENTSLICE_SCHEDULE_GROUP"       // schedule group of long sleeps (optional)
	EnvScheduleDLQARN     = "AGENTSLICE_SCHEDULE_DLQ_ARN"     // standard queue for wake-ups Scheduler could not deliver (optional)
	EnvModelCatalog       = "AGENTSLICE_MODEL_CATALOG"        // model catalog JSON (model.DecodeCatalog)
	EnvModel              = "AGENTSLICE_MODEL"                // model name in the catalog (optional: its default)
	EnvAgents             = "AGENTSLICE_AGENTS"               // agents document JSON, instructions inline (optional; runtime.DecodeAgentsDoc)
	EnvAgentsFile         = "AGENTSLICE_AGENTS_FILE"          // instead of EnvAgents: a file holding it (Reader.File; the stack's choice for agents over 4 KB)
	EnvToolServers        = "AGENTSLICE_TOOL_SERVERS"         // comma-separated RAP base URLs (may be empty)
	EnvCallbackURL        = "AGENTSLICE_CALLBACK_URL"         // the rapreceiver Function URL
	EnvCallbackKeysSecret = "AGENTSLICE_CALLBACK_KEYS_SECRET" // Secrets Manager secret holding the keyring
	EnvCallbackKeys       = "AGENTSLICE_CALLBACK_KEYS"        // the keyring itself (local runs)

	// Optional tuning; the stack need not set them.
	EnvDSQLUser    = "AGENTSLICE_DSQL_USER"    // database role, default "admin"
	EnvSliceMargin = "AGENTSLICE_SLICE_MARGIN" // Go duration kept free before the invocation deadline
	EnvLogLevel    = "AGENTSLICE_LOG_LEVEL"    // debug, info, warn, error
	// A thread whose model provider is down waits through the timers
	// (runtime.ProviderWait): the first wait, the cap of the doubling
	// waits, and the whole wait before the completion fails for good (Go
	// durations; defaults 30s, 15m, 24h; "off" as the first wait
	// dead-letters the message after its receives instead).
	EnvProviderWait = "AGENTSLICE_PROVIDER_WAIT"
	// EnvTreeBudgets, "on", keeps trees' budgets in the dedup table
	// (dedup.Ledger); off by default: two to four DynamoDB requests per
	// completion. Threads' and agents' own limits need no ledger.
	EnvTreeBudgets = "AGENTSLICE_TREE_BUDGETS"
	// EnvSharedTPM, "on", makes the model's tokens_per_minute (the
	// catalog's) one token bucket in the dedup table shared by every slice
	// function; off by default.
	EnvSharedTPM = "AGENTSLICE_SHARED_TPM"
	// Per-thread bounds (runtime.Limits), as serve's limits.*: active
	// subscriptions and children alive at once (default 0, no cap), and
	// the uncompacted ancestors a thread's view may reach before it is
	// folded into one summary (default 8).
	EnvMaxSubscriptions  = "AGENTSLICE_MAX_SUBSCRIPTIONS"
	EnvMaxChildren       = "AGENTSLICE_MAX_CHILDREN"
	EnvMaxInheritedDepth = "AGENTSLICE_MAX_INHERITED_DEPTH"
	EnvProviderWaitMax   = "AGENTSLICE_PROVIDER_WAIT_MAX"
	EnvProviderMaxWait   = "AGENTSLICE_PROVIDER_MAX_WAIT"
	EnvRegion            = "AWS_REGION"       // set by Lambda
	EnvTaskRoot          = "LAMBDA_TASK_ROOT" // the function's code directory, set by Lambda
)

// EnvError names an environment variable that is missing or wrong.
type EnvError struct {
	Var    string
	Reason string
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("environment variable %s: %s", e.Var, e.Reason)
}

// Reader reads variables and remembers the first problem, so that a
// config loader reads top to bottom and reports the first variable at
// fault (Err).
type Reader struct {
	Get func(string) string // os.Getenv in main
	// ReadFile reads the files File names; nil means os.ReadFile.
	ReadFile func(string) ([]byte, error)
	err      error
}

// Err returns the first problem, an *EnvError, or nil.
func (r *Reader) Err() error { return r.err }

// Fail records a problem with variable name, unless one was recorded.
func (r *Reader) Fail(name, format string, args ...any) {
	if r.err == nil {
		r.err = &EnvError{Var: name, Reason: fmt.Sprintf(format, args...)}
	}
}

// Opt returns the trimmed value of an optional variable.
func (r *Reader) Opt(name string) string { return strings.TrimSpace(r.Get(name)) }

// Must returns the value of a required variable; what says what it is for
// the error.
func (r *Reader) Must(name, what string) string {
	v := r.Opt(name)
	if v == "" {
		r.Fail(name, "missing (%s)", what)
	}
	return v
}

// File returns the contents of the file the optional variable name holds
// the path of ("" when it is unset). A relative path is relative to the
// function's code directory (LAMBDA_TASK_ROOT; the working directory when
// that is unset, as in local runs), where the stack's asset puts its files.
func (r *Reader) File(name string) string {
	path := r.Opt(name)
	if path == "" {
		return ""
	}
	if root := r.Opt(EnvTaskRoot); root != "" && !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	read := r.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	b, err := read(path)
	if err != nil {
		r.Fail(name, "reading the file: %v", err)
		return ""
	}
	return string(b)
}

// URL returns a required absolute http(s) URL.
func (r *Reader) URL(name, what string) string {
	v := r.Must(name, what)
	if v != "" {
		if err := CheckHTTPURL(v); err != nil {
			r.Fail(name, "%v", err)
		}
	}
	return v
}

// QueueURL returns a required SQS queue URL, FIFO (its name ends in .fifo)
// or standard as fifo says.
func (r *Reader) QueueURL(name, what string, fifo bool) string {
	v := r.URL(name, what)
	switch {
	case v == "":
	case fifo && !strings.HasSuffix(v, ".fifo"):
		r.Fail(name, "%q is not a FIFO queue URL (the name must end in .fifo)", v)
	case !fifo && strings.HasSuffix(v, ".fifo"):
		r.Fail(name, "%q is a FIFO queue; this must be a standard queue", v)
	}
	return v
}

// Keys reads the callback keyring's source: exactly one of
// AGENTSLICE_CALLBACK_KEYS_SECRET and AGENTSLICE_CALLBACK_KEYS.
func (r *Reader) Keys() KeySource {
	k := KeySource{SecretARN: r.Opt(EnvCallbackKeysSecret), Inline: r.Opt(EnvCallbackKeys)}
	switch {
	case k.SecretARN == "" && k.Inline == "":
		r.Fail(EnvCallbackKeysSecret, "missing: set it to the Secrets Manager secret holding the callback keyring (or, for local runs only, set %s to the keyring)", EnvCallbackKeys)
	case k.SecretARN != "" && k.Inline != "":
		r.Fail(EnvCallbackKeys, "set together with %s; set exactly one of them", EnvCallbackKeysSecret)
	}
	return k
}

// LogLevel reads AGENTSLICE_LOG_LEVEL (default info).
func (r *Reader) LogLevel() slog.Level {
	var l slog.Level
	v := r.Opt(EnvLogLevel)
	if v == "" {
		return slog.LevelInfo
	}
	if err := l.UnmarshalText([]byte(v)); err != nil {
		r.Fail(EnvLogLevel, "%q is not a log level (debug, info, warn, error)", v)
	}
	return l
}

// CheckHTTPURL reports whether s is an absolute http(s) URL.
func CheckHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return nil
}

// KeySource says where the callback keyring comes from: exactly one of
// SecretARN (production) and Inline (local runs) is set.
type KeySource struct {
	SecretARN string
	Inline    string
}

// SecretsAPI is the part of *secretsmanager.Client LoadKeyring uses.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// LoadKeyring returns the callback keyring: parsed from src.Inline, or read
// once from the Secrets Manager secret src.SecretARN (its string value is
// the JSON the stack generates, {"id": ..., "secret": ...}, or a keyring
// spec "id:base64secret[,id:base64secret...]", current key first; see
// rap.ParseKeyringSecret).
// Functions hold it in a KeyringCache, which reads the secret again once
// its TTL has passed.
func LoadKeyring(ctx context.Context, src KeySource, api SecretsAPI) (*rap.Keyring, error) {
	if src.Inline != "" {
		kr, err := rap.ParseKeyring(src.Inline)
		if err != nil {
			return nil, &EnvError{Var: EnvCallbackKeys, Reason: err.Error()}
		}
		return kr, nil
	}
	if src.SecretARN == "" {
		return nil, &EnvError{Var: EnvCallbackKeysSecret, Reason: "missing"}
	}
	out, err := api.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(src.SecretARN)})
	if err != nil {
		return nil, fmt.Errorf("lambdafn: reading the callback keyring from secret %s (%s): %w", src.SecretARN, EnvCallbackKeysSecret, err)
	}
	spec := strings.TrimSpace(aws.ToString(out.SecretString))
	if spec == "" {
		return nil, &EnvError{Var: EnvCallbackKeysSecret, Reason: fmt.Sprintf("secret %s has no string value; store the keyring \"id:base64secret,...\" as its SecretString", src.SecretARN)}
	}
	kr, err := rap.ParseKeyringSecret(spec)
	if err != nil {
		return nil, &EnvError{Var: EnvCallbackKeysSecret, Reason: fmt.Sprintf("secret %s: %v", src.SecretARN, err)}
	}
	return kr, nil
}

// Options adjust how a function is built. The zero value is what the
// Lambda mains use.
type Options struct {
	// AWS is the AWS configuration; default LoadAWSConfig. Endpoints of
	// local stand-ins come from the SDK's AWS_ENDPOINT_URL_<SERVICE>
	// variables either way.
	AWS *aws.Config
	// Stdout receives logs and EMF records; default os.Stdout (through a
	// SyncWriter).
	Stdout io.Writer
	// Logger gets the function's JSON logs; default NewLogger(Stdout).
	Logger *slog.Logger
	// HTTPClient talks to tool servers (slice function only); default a
	// client with a ToolHTTPTimeout timeout.
	HTTPClient *http.Client
	// ModelHTTPClient talks to model providers (Bedrock, OpenAI-compatible;
	// slice function only); default NewModelHTTPClient, whose only bound
	// on a completion is the slice's context.
	ModelHTTPClient *http.Client
	Now             func() time.Time
	// KeyringTTL is how long the callback keyring read from Secrets
	// Manager is used before the secret is read again; default
	// DefaultKeyringTTL.
	KeyringTTL time.Duration
	// Tracing, when set, traces the slices (slice function), the
	// callbacks passed on (receiver) and the wake-ups relayed (delay
	// relay), and is flushed before each invocation returns; the mains
	// build it with otelx.Setup from the OTEL_* environment. Nil: no
	// tracing.
	Tracing *otelx.Tracing
}

// Defaults fills in what is unset; level is the logger's level.
func (o *Options) Defaults(level slog.Level) {
	if o.Stdout == nil {
		o.Stdout = &SyncWriter{W: os.Stdout}
	}
	if o.Logger == nil {
		o.Logger = NewLogger(o.Stdout, level)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: ToolHTTPTimeout}
	}
	if o.ModelHTTPClient == nil {
		o.ModelHTTPClient = NewModelHTTPClient()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// ToolHTTPTimeout bounds each request to a tool server (a toolset fetch, an
// invocation POST, a notification), body included: RAP answers those at
// once and sends results later to the callback URL.
const ToolHTTPTimeout = 30 * time.Second

// Bounds of the model client's connection set-up. They end once the
// connection is open, so they never cut a stream.
const (
	ModelDialTimeout         = 10 * time.Second
	ModelTLSHandshakeTimeout = 10 * time.Second
)

// NewModelHTTPClient returns the HTTP client of model providers. It has no
// overall timeout (http.Client.Timeout covers reading the body, and a
// streamed completion may rightly take most of the slice) and no response
// header timeout (Bedrock may hold its headers until the first token):
// the completion's context, the slice's deadline, is its only bound on a
// request. Dialing and the TLS handshake are bounded (ModelDialTimeout,
// ModelTLSHandshakeTimeout); idle connections are kept for reuse by the
// next warm invocation.
func NewModelHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: ModelDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = ModelTLSHandshakeTimeout
	t.ResponseHeaderTimeout = 0
	return &http.Client{Transport: t}
}

// AWSConfig returns o.AWS or loads the default configuration.
func (o *Options) AWSConfig(ctx context.Context) (aws.Config, error) {
	if o.AWS != nil {
		return *o.AWS, nil
	}
	return LoadAWSConfig(ctx)
}

// LoadAWSConfig loads the default AWS configuration: the Lambda role's
// credentials and AWS_REGION, and any AWS_ENDPOINT_URL_<SERVICE> override.
func LoadAWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("lambdafn: loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, &EnvError{Var: EnvRegion, Reason: "missing (the AWS region of the queues and tables)"}
	}
	return cfg, nil
}

// Fatal reports that a function could not start, as one JSON log line on
// stderr naming the problem (an *EnvError names the variable), and exits
// with status 1. Lambda reports the init failure with this line in the
// function's log.
func Fatal(function string, err error) {
	attrs := []any{slog.String("function", function), slog.String("error", err.Error())}
	var ee *EnvError
	if errors.As(err, &ee) {
		attrs = append(attrs, slog.String("variable", ee.Var))
	}
	NewLogger(os.Stderr, slog.LevelInfo).Error("cannot start", attrs...)
	os.Exit(1)
}

// InitTimeout bounds a function's init (the network calls made before
// lambda.Start: the AWS configuration, the keyring secret). Lambda allows
// 10 s of init and, past it, runs init again inside the first invocation;
// failing fast with a clear error is better than both.
const InitTimeout = 4 * time.Second

// InitContext is the context of a function's init: InitTimeout from now.
func InitContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), InitTimeout)
}
