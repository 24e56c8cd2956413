package stack

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// StackProps configures an agentslice deployment.
type StackProps struct {
	awscdk.StackProps

	// ToolServers are the RAP tool servers' base URLs (absolute https URLs,
	// no query, no commas). The slice function gets them comma-separated in
	// AGENTSLICE_TOOL_SERVERS.
	ToolServers []string
	// ModelCatalog is the JSON of a model.Catalog (model.DecodeCatalog). It is
	// validated here and passed to the slice function unchanged.
	ModelCatalog string
	// ModelName names the catalog model the slice function runs; empty means
	// the catalog's default.
	ModelName string
	// BudgetModels names the catalog models the slice function's timeout
	// is sized for (SliceBudget). Empty means the models the Agents use
	// (ModelName, or the catalog's default, for an agent naming none) when
	// there are agents, else every catalog model.
	BudgetModels []string
	// Agents is the JSON of the deployment's agents document
	// (runtime.AgentsDoc, instructions inline: cmd/cdkapp resolves
	// deploy/agents.json); empty means no agents. It is validated against
	// the catalog here and passed to the slice function compacted.
	Agents string
	// BinDir holds the prebuilt functions: BinDir/<name>/bootstrap for
	// each name in Functions (what `make build` writes).
	BinDir string

	// SliceBatchSize is the input queue's event source batch size (1..10,
	// the FIFO maximum); 0 means DefaultSliceBatchSize.
	SliceBatchSize int
	// MaxConcurrency caps how many slice functions the input queue's event
	// source runs at once (2..1000); 0 means DefaultMaxConcurrency.
	MaxConcurrency int
	// BackgroundMaxConcurrency caps the slice functions the background
	// input queue's event source runs at once (2..1000, at most
	// MaxConcurrency); 0 means DefaultBackgroundMaxConcurrency (or
	// MaxConcurrency when that is lower). Interactive threads keep the
	// difference for themselves under a background flood.
	BackgroundMaxConcurrency int
	// CallbackPrincipals are IAM principal ARNs (roles, users, or accounts
	// as arn:aws:iam::123456789012:root) allowed to invoke the receiver's
	// Function URL, for RAP tool servers outside this account: each gets
	// lambda:InvokeFunctionUrl and lambda:InvokeFunction (condition
	// lambda:InvokedViaFunctionUrl = true) in the receiver's resource
	// policy. Principals in this account need both in an identity policy:
	// attach the stack's CallbackInvokePolicyArn.
	CallbackPrincipals []string
	// PublicCallbacks makes the receiver's Function URL public (auth type
	// NONE). The default is IAM auth: only SigV4-signed requests from
	// allowed principals reach it, which RAP tool servers outside AWS (and
	// Infinity's tools) cannot send. Every callback URL carries its own
	// HMAC capability (thread, call, expiry), checked by the receiver
	// either way, so a public URL accepts only callbacks the runtime issued.
	PublicCallbacks bool
	// ReceiverConcurrency is the receiver's reserved concurrency: no more
	// callbacks run at once, so a flood of forged callbacks to a public URL
	// (each refused by the HMAC check, but each an invocation) cannot take
	// the account's concurrency from the slice function. 0 means the
	// default: DefaultReceiverConcurrency with PublicCallbacks, nothing
	// reserved with IAM auth (Lambda refuses an unsigned request before the
	// function runs). NoReservedConcurrency reserves nothing either way;
	// otherwise 1..1000. A callback over the limit is answered 429, which
	// RAP tool servers do not retry: size it for the callback burst.
	ReceiverConcurrency int
	// CallbackBaseURL replaces the receiver's Function URL as the base of
	// the callback URLs the slice function signs (AGENTSLICE_CALLBACK_URL =
	// CallbackBaseURL + CallbackPath): an absolute https URL ending in "/",
	// without query, such as a CloudFront distribution with an AWS WAF web
	// ACL whose origin is the Function URL (docs/aws.md). The receiver
	// reads only the query, so any front that forwards it works. Empty
	// means the Function URL.
	CallbackBaseURL string
	// AlarmTopicARN is an SNS topic ARN the stack's alarms (alarms.go)
	// notify when they go off and when they recover; empty means alarms
	// without actions.
	AlarmTopicARN string
	// RetainData keeps the table and the DSQL cluster (with deletion
	// protection) when the stack is destroyed. By default they are deleted
	// with the stack, as everything else always is.
	RetainData bool

	// TreeBudgets keeps trees' budgets in the dedup table (the slice
	// function's AGENTSLICE_TREE_BUDGETS=on; docs/budgets.md): off by
	// default, two to four DynamoDB requests per completion when on.
	// SharedTPM makes the model's tokens_per_minute one token bucket in
	// the same table, shared by every slice function
	// (AGENTSLICE_SHARED_TPM=on). Either adds dynamodb:GetItem and
	// dynamodb:UpdateItem on the table to the slice function's role.
	TreeBudgets, SharedTPM bool
	// Telemetry is OpenTelemetry's standard configuration, OTEL_*
	// variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_SAMPLER, ...;
	// internal/otelx reads them), given to every function as is. Empty
	// (the default) means no tracing. Names must start with OTEL_; the
	// values count against the slice function's 4 KB of environment and
	// are plain text in the template (no credentials).
	Telemetry map[string]string
}

// Defaults for the zero values of StackProps.
const (
	DefaultSliceBatchSize = 10
	DefaultMaxConcurrency = 50
	// DefaultBackgroundMaxConcurrency is the background queue's default:
	// a fifth of the default interactive limit.
	DefaultBackgroundMaxConcurrency = 10
	// DefaultReceiverConcurrency is the receiver's reserved concurrency
	// with PublicCallbacks: a callback takes tens of milliseconds (one
	// HMAC check, one SendMessage), so 20 at once serve hundreds a second.
	DefaultReceiverConcurrency = 20
	// NoReservedConcurrency as ReceiverConcurrency reserves nothing (an
	// account whose concurrency quota cannot spare it: Lambda keeps 100
	// unreserved).
	NoReservedConcurrency = -1
)

// PropsError is a StackProps field that cannot be deployed.
type PropsError struct {
	Field  string
	Reason string
	Err    error // the cause, when a caller may test for it (ErrMissingBootstrap)
}

func (e *PropsError) Error() string { return "stack: " + e.Field + ": " + e.Reason }

// ErrMissingBootstrap is wrapped by the PropsError for a function binary
// that was not built.
var ErrMissingBootstrap = errors.New("bootstrap not built (run `make build`)")

// Check validates p and returns the decoded catalog, or a *PropsError.
func (p *StackProps) Check() (*model.Catalog, error) {
	bad := func(field, format string, args ...any) error {
		return &PropsError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	for i, s := range p.ToolServers {
		if err := checkToolServer(s); err != nil {
			return nil, bad(fmt.Sprintf("ToolServers[%d]", i), "%v", err)
		}
	}
	if strings.TrimSpace(p.ModelCatalog) == "" {
		return nil, bad("ModelCatalog", "empty: the slice function needs a model catalog (JSON)")
	}
	cat, err := model.DecodeCatalog([]byte(p.ModelCatalog))
	if err != nil {
		return nil, bad("ModelCatalog", "%v", err)
	}
	if p.ModelName != "" {
		if _, err := cat.Lookup(p.ModelName); err != nil {
			return nil, bad("ModelName", "%v", err)
		}
	}
	if err := checkAgents(p.Agents, cat); err != nil {
		return nil, err
	}
	if _, err := sliceBudget(cat, p.budgetModels(cat)); err != nil {
		return nil, err
	}
	if n := p.SliceBatchSize; n < 0 || n > 10 {
		return nil, bad("SliceBatchSize", "%d is outside 1..10 (the FIFO event source maximum), or 0 for the default", n)
	}
	if n := p.MaxConcurrency; n != 0 && (n < 2 || n > 1000) {
		return nil, bad("MaxConcurrency", "%d is outside 2..1000, or 0 for the default", n)
	}
	if n := p.BackgroundMaxConcurrency; n != 0 && (n < 2 || n > 1000) {
		return nil, bad("BackgroundMaxConcurrency", "%d is outside 2..1000, or 0 for the default", n)
	}
	if n, m := p.BackgroundMaxConcurrency, p.MaxConcurrency; n != 0 && m != 0 && n > m {
		return nil, bad("BackgroundMaxConcurrency", "%d is above MaxConcurrency %d; background should get less than interactive", n, m)
	}
	if n := p.ReceiverConcurrency; n != 0 && n != NoReservedConcurrency && (n < 1 || n > 1000) {
		return nil, bad("ReceiverConcurrency", "%d is outside 1..1000, or 0 for the default, or %d for none", n, NoReservedConcurrency)
	}
	if err := checkCallbackBase(p.CallbackBaseURL); err != nil {
		return nil, bad("CallbackBaseURL", "%v", err)
	}
	if arn := p.AlarmTopicARN; arn != "" && !isTopicARN(arn) {
		return nil, bad("AlarmTopicARN", "%q is not an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:NAME)", arn)
	}
	if p.PublicCallbacks && len(p.CallbackPrincipals) > 0 {
		return nil, bad("CallbackPrincipals", "set together with PublicCallbacks; a public URL needs no principals")
	}
	for i, arn := range p.CallbackPrincipals {
		if !strings.HasPrefix(arn, "arn:") || strings.Count(arn, ":") < 5 {
			return nil, bad(fmt.Sprintf("CallbackPrincipals[%d]", i), "%q is not an IAM principal ARN", arn)
		}
	}
	if err := checkTelemetry(p.Telemetry); err != nil {
		return nil, err
	}
	if p.BinDir == "" {
		return nil, bad("BinDir", "empty: it must hold <name>/bootstrap for %s", strings.Join(Functions(), ", "))
	}
	for _, name := range Functions() {
		path := filepath.Join(p.BinDir, name, "bootstrap")
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
			return nil, &PropsError{Field: "BinDir", Reason: fmt.Sprintf("%s: %v", path, ErrMissingBootstrap), Err: ErrMissingBootstrap}
		}
	}
	return cat, nil
}

func checkCallbackBase(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: %v", s, err)
	case u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("%q is not an absolute https URL", s)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("%q has a query, fragment or user info; the callback URL's query is the capability", s)
	case !strings.HasSuffix(u.Path, "/"):
		return fmt.Errorf("%q does not end in \"/\" (%s is appended)", s, CallbackPath)
	}
	return nil
}

// isTopicARN reports whether arn has the shape of an SNS topic ARN.
func isTopicARN(arn string) bool {
	parts := strings.Split(arn, ":")
	return len(parts) == 6 && parts[0] == "arn" && parts[1] != "" && parts[2] == "sns" && parts[3] != "" && parts[4] != "" && parts[5] != ""
}

// receiverConcurrency is the receiver's reserved concurrency (0: none).
func (p *StackProps) receiverConcurrency() int {
	switch n := p.ReceiverConcurrency; {
	case n == NoReservedConcurrency:
		return 0
	case n > 0:
		return n
	case p.PublicCallbacks:
		return DefaultReceiverConcurrency
	}
	return 0
}

// Unwrap returns the cause, if any.
func (e *PropsError) Unwrap() error { return e.Err }

func checkToolServer(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", s, err)
	}
	switch {
	case u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("%q is not an absolute https URL (the slice function calls it over the internet)", s)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("%q has a query, fragment or user info; a RAP base URL has none", s)
	case strings.ContainsAny(s, ", \t\n"):
		return fmt.Errorf("%q contains a comma or white space (the list is passed comma-separated)", s)
	}
	return nil
}

// checkAgents validates the agents document: the definitions, and that
// every model they name is in the catalog.
func checkAgents(doc string, cat *model.Catalog) error {
	if strings.TrimSpace(doc) == "" {
		return nil
	}
	bad := func(err error) error {
		var ae *runtime.AgentError
		if errors.As(err, &ae) && ae.Field != "" {
			return &PropsError{Field: "Agents", Reason: fmt.Sprintf("field %q: %s", ae.Field, ae.Reason), Err: err}
		}
		return &PropsError{Field: "Agents", Reason: err.Error(), Err: err}
	}
	d, err := runtime.DecodeAgentsDoc([]byte(doc))
	if err != nil {
		return bad(err)
	}
	defs, err := d.Resolve("", func(string) ([]byte, error) {
		return nil, errors.New("instruction files must be resolved before synth (cmd/cdkapp does it)")
	})
	if err != nil {
		return bad(err)
	}
	for i, a := range defs {
		if _, err := cat.Lookup(a.Model); a.Model != "" && err != nil {
			return bad(&runtime.AgentError{Agent: a.Name, Field: fmt.Sprintf("agents[%d].model", i), Reason: err.Error()})
		}
	}
	return nil
}

// budgetModels is the list of models the slice budget is computed for
// (StackProps.BudgetModels); nil means every catalog model. It assumes
// checkAgents accepted p.Agents.
func (p *StackProps) budgetModels(cat *model.Catalog) []string {
	if len(p.BudgetModels) > 0 {
		return p.BudgetModels
	}
	if strings.TrimSpace(p.Agents) == "" {
		return nil
	}
	d, err := runtime.DecodeAgentsDoc([]byte(p.Agents))
	if err != nil {
		return nil
	}
	defs, err := d.Resolve("", func(string) ([]byte, error) { return nil, errors.New("unresolved instruction file") })
	if err != nil {
		return nil
	}
	def := p.ModelName
	if def == "" {
		def = cat.Default
	}
	seen := map[string]bool{def: true}
	out := []string{def} // threads of agents naming no model, and threads without an agent
	for _, a := range defs {
		if a.Model != "" && !seen[a.Model] {
			seen[a.Model] = true
			out = append(out, a.Model)
		}
	}
	return out
}
