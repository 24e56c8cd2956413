package serverless

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// DefaultMargin is kept free between the end of the slice and the Lambda
// deadline, for dead-letter sends and the reply to Lambda.
const DefaultMargin = 3 * time.Second

// DefaultDSQLUser is the database role the slice function connects as.
const DefaultDSQLUser = "admin"

// SliceConfig is the slice function's configuration.
type SliceConfig struct {
	InputQueueURL, DLQURL, OutputQueueURL, DelayQueueURL string
	// BackgroundQueueURL is the background threads' input queue ("": one
	// queue for both classes).
	BackgroundQueueURL string
	DedupTable         string
	// Exactly one of DSQLEndpoint and PGDSN is set.
	DSQLEndpoint, DSQLUser, Region  string
	PGDSN                           string
	SchedulerRoleARN, ScheduleGroup string
	// ScheduleDLQARN is every schedule's dead-letter queue; optional (the
	// stack sets it; without it a wake-up Scheduler cannot deliver is lost).
	ScheduleDLQARN string
	Model          model.Config
	// Catalog is the whole model catalog (agents may name any model);
	// Agents and DefaultAgent are the agent definitions (none: every
	// thread runs Model without instructions).
	Catalog      *model.Catalog
	Agents       []runtime.Agent
	DefaultAgent string
	ToolServers  []string
	CallbackURL  string
	Keys         lambdafn.KeySource
	Margin       time.Duration
	LogLevel     slog.Level
	// ProviderWait is how a thread waits out its model provider's outage
	// (its Timers are the function's); nil: off, a retryable model error
	// fails the slice and the message is dead-lettered after its receives.
	ProviderWait *runtime.ProviderWait
	// TreeBudgets keeps trees' budgets in the dedup table (dedup.Ledger).
	TreeBudgets bool
	// SharedTPM makes Model.TokensPerMinute a token bucket in the dedup
	// table shared by every slice function (dedup.TokenBucket).
	SharedTPM bool
	// MaxSubscriptions, MaxChildren and MaxInheritedDepth are the
	// engine's per-thread bounds (runtime.Limits); MaxInheritedDepth
	// defaults to DefaultMaxInheritedDepth, as in serve.
	MaxSubscriptions, MaxChildren, MaxInheritedDepth int
}

// DefaultMaxInheritedDepth is MaxInheritedDepth's default, serve's
// limits.max_inherited_depth's.
const DefaultMaxInheritedDepth = 8

// LoadSliceConfig reads the slice function's configuration with getenv
// (os.Getenv in main). The first variable that is missing or wrong is
// reported as a *lambdafn.EnvError naming it.
func LoadSliceConfig(getenv func(string) string) (SliceConfig, error) {
	r := &lambdafn.Reader{Get: getenv}
	c := SliceConfig{
		InputQueueURL:      r.QueueURL(lambdafn.EnvInputQueueURL, "the FIFO input queue URL", true),
		BackgroundQueueURL: r.BackgroundQueueURL(),
		DLQURL:             r.URL(lambdafn.EnvDLQURL, "the input queue's dead-letter queue URL"),
		OutputQueueURL:     r.QueueURL(lambdafn.EnvOutputQueueURL, "the standard output queue URL", false),
		DelayQueueURL:      r.QueueURL(lambdafn.EnvDelayQueueURL, "the standard delay queue URL", false),
		DedupTable:         r.Must(lambdafn.EnvDedupTable, "the DynamoDB table of processed message IDs"),
		DSQLEndpoint:       r.Opt(lambdafn.EnvDSQLEndpoint),
		PGDSN:              r.Opt(lambdafn.EnvPGDSN),
		SchedulerRoleARN:   r.Must(lambdafn.EnvSchedulerRoleARN, "the IAM role EventBridge Scheduler assumes to send wake-ups"),
		ScheduleGroup:      r.Opt(lambdafn.EnvScheduleGroup),
		ScheduleDLQARN:     r.Opt(lambdafn.EnvScheduleDLQARN),
		CallbackURL:        r.URL(lambdafn.EnvCallbackURL, "the callback receiver's Function URL"),
		Keys:               r.Keys(),
		Margin:             DefaultMargin,
		LogLevel:           r.LogLevel(),
	}
	switch {
	case c.DSQLEndpoint == "" && c.PGDSN == "":
		r.Fail(lambdafn.EnvDSQLEndpoint, "missing (the Aurora DSQL cluster host name; for local runs only, set %s instead)", lambdafn.EnvPGDSN)
	case c.DSQLEndpoint != "" && c.PGDSN != "":
		r.Fail(lambdafn.EnvPGDSN, "set together with %s; set exactly one of them", lambdafn.EnvDSQLEndpoint)
	case c.DSQLEndpoint != "":
		c.DSQLUser = r.Opt(lambdafn.EnvDSQLUser)
		if c.DSQLUser == "" {
			c.DSQLUser = DefaultDSQLUser
		}
		c.Region = r.Must(lambdafn.EnvRegion, "the AWS region, needed to sign DSQL auth tokens")
	}
	for i, s := range strings.Split(r.Opt(lambdafn.EnvToolServers), ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if err := lambdafn.CheckHTTPURL(s); err != nil {
			r.Fail(lambdafn.EnvToolServers, "entry %d: %v", i, err)
		}
		c.ToolServers = append(c.ToolServers, s)
	}
	if v := r.Opt(lambdafn.EnvSliceMargin); v != "" {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			r.Fail(lambdafn.EnvSliceMargin, "%q is not a duration such as 3s", v)
		case d < 0:
			r.Fail(lambdafn.EnvSliceMargin, "%v is negative", d)
		default:
			c.Margin = d
		}
	}
	c.ProviderWait = readProviderWait(r)
	c.MaxInheritedDepth = DefaultMaxInheritedDepth
	for _, f := range []struct {
		name string
		to   *int
		zero bool // 0 allowed: no cap
	}{{lambdafn.EnvMaxSubscriptions, &c.MaxSubscriptions, true}, {lambdafn.EnvMaxChildren, &c.MaxChildren, true},
		{lambdafn.EnvMaxInheritedDepth, &c.MaxInheritedDepth, false}} {
		n, err := strconv.Atoi(r.Opt(f.name))
		switch {
		case r.Opt(f.name) == "":
		case err != nil || n < 0:
			r.Fail(f.name, "%q is not a whole number of 0 or more", r.Opt(f.name))
		case n == 0 && !f.zero:
			r.Fail(f.name, "0: the depth must be at least 1 (unset: %d)", DefaultMaxInheritedDepth)
		default:
			*f.to = n
		}
	}
	for _, f := range []struct {
		name string
		to   *bool
	}{{lambdafn.EnvTreeBudgets, &c.TreeBudgets}, {lambdafn.EnvSharedTPM, &c.SharedTPM}} {
		switch v := r.Opt(f.name); v {
		case "", "off":
		case "on":
			*f.to = true
		default:
			r.Fail(f.name, "%q is neither on nor off", v)
		}
	}
	if raw := r.Must(lambdafn.EnvModelCatalog, "the model catalog JSON"); raw != "" && r.Err() == nil {
		cat, err := model.DecodeCatalog([]byte(raw))
		if err != nil {
			r.Fail(lambdafn.EnvModelCatalog, "%v", err)
		} else if c.Model, err = cat.Lookup(r.Opt(lambdafn.EnvModel)); err != nil {
			r.Fail(lambdafn.EnvModel, "%v", err)
		} else {
			c.Catalog = cat
		}
	}
	agentsVar, raw := lambdafn.EnvAgents, r.Opt(lambdafn.EnvAgents)
	if r.Opt(lambdafn.EnvAgentsFile) != "" {
		if raw != "" {
			r.Fail(lambdafn.EnvAgentsFile, "set together with %s; set exactly one of them", lambdafn.EnvAgents)
		}
		agentsVar, raw = lambdafn.EnvAgentsFile, r.File(lambdafn.EnvAgentsFile)
	}
	if strings.TrimSpace(raw) != "" && r.Err() == nil {
		if err := c.readAgents(raw); err != nil {
			r.Fail(agentsVar, "%v", err)
		}
	}
	if err := r.Err(); err != nil {
		return SliceConfig{}, err
	}
	return c, nil
}

// readAgents decodes the agents document (instructions inline) and checks
// that the models it names are in the catalog.
func (c *SliceConfig) readAgents(raw string) error {
	doc, err := runtime.DecodeAgentsDoc([]byte(raw))
	if err != nil {
		return err
	}
	defs, err := doc.Resolve("", func(string) ([]byte, error) {
		return nil, errors.New("instruction files are resolved at synth; the document must hold the instructions inline")
	})
	if err != nil {
		return err
	}
	for i, a := range defs {
		if a.Model == "" {
			continue
		}
		if _, err := c.Catalog.Lookup(a.Model); err != nil {
			return &runtime.AgentError{Agent: a.Name, Field: fmt.Sprintf("agents[%d].model", i), Reason: err.Error()}
		}
	}
	c.Agents, c.DefaultAgent = defs, doc.DefaultAgent
	return nil
}

// readProviderWait reads the provider-wait variables: on by default with
// runtime's defaults, off when the first wait is "off".
func readProviderWait(r *lambdafn.Reader) *runtime.ProviderWait {
	if r.Opt(lambdafn.EnvProviderWait) == "off" {
		return nil
	}
	var w runtime.ProviderWait
	for _, f := range []struct {
		name string
		to   *time.Duration
	}{
		{lambdafn.EnvProviderWait, &w.First},
		{lambdafn.EnvProviderWaitMax, &w.Interval},
		{lambdafn.EnvProviderMaxWait, &w.MaxWait},
	} {
		v := r.Opt(f.name)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		switch {
		case err != nil:
			r.Fail(f.name, "%q is not a duration such as 30s", v)
		case d <= 0:
			r.Fail(f.name, "%v is not positive", d)
		default:
			*f.to = d
		}
	}
	w = w.WithDefaults()
	return &w
}
