package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/stack"
)

// Context keys (cdk.json "context", or `cdk synth -c key=value`). Values
// given with -c arrive as strings; cdk.json may also hold lists, numbers and
// booleans.
const (
	ctxStackName          = "stackName"           // default DefaultStackName
	ctxToolServers        = "toolServers"         // RAP base URLs: a list, or comma-separated
	ctxModelCatalog       = "modelCatalog"        // a JSON file path, or the JSON itself
	ctxModelName          = "modelName"           // catalog name; default the catalog's default
	ctxAgents             = "agents"              // agents document path; default DefaultAgents (optional file)
	ctxBinDir             = "binDir"              // default "bin"
	ctxSliceBatchSize     = "sliceBatchSize"      // 1..10
	ctxMaxConcurrency     = "maxConcurrency"      // 2..1000
	ctxCallbackPrincipals = "callbackPrincipals"  // IAM principal ARNs: a list, or comma-separated
	ctxRetainData         = "retainData"          // true keeps table and cluster on destroy
	ctxPublicCallbacks    = "publicCallbacks"     // true: the receiver URL has auth type NONE (HMAC-signed URLs only)
	ctxBudgetModels       = "budgetModels"        // catalog models the slice timeout is sized for: a list, or comma-separated; default all
	ctxReceiverConc       = "receiverConcurrency" // the receiver's reserved concurrency: 1..1000, or -1 for none; default 20 with publicCallbacks, none otherwise
	ctxAlarmTopicARN      = "alarmTopicArn"       // SNS topic the alarms notify; default none
	ctxCallbackBaseURL    = "callbackBaseUrl"     // base of the signed callback URLs (a front such as CloudFront + WAF); default the receiver's Function URL
	ctxTreeBudgets        = "treeBudgets"         // true: trees' budgets in the dedup table (AGENTSLICE_TREE_BUDGETS=on); default false
	ctxSharedTPM          = "sharedTpm"           // true: one shared token bucket per model in the dedup table (AGENTSLICE_SHARED_TPM=on); default false
	ctxOTel               = "otel"                // OTEL_* settings for every function: an object, or NAME=VALUE pairs comma-separated; default none (no tracing)
)

// Defaults of the context values.
const (
	DefaultStackName    = "Agentslice"
	DefaultModelCatalog = "deploy/models.json"
	DefaultAgents       = "deploy/agents.json"
	DefaultBinDir       = "bin"
)

// config is what main passes to stack.New.
type config struct {
	stackName string
	props     stack.StackProps
}

// readConfig reads the context (get returns nil for an unset key), falling
// back to the environment for the values the slice function also reads
// (AGENTSLICE_TOOL_SERVERS, AGENTSLICE_MODEL_CATALOG, AGENTSLICE_MODEL).
// Errors name the context key.
func readConfig(get func(string) any, getenv func(string) string, readFile func(string) ([]byte, error)) (config, error) {
	var c config
	var err error
	str := func(key, env, def string) (string, error) {
		switch v := get(key).(type) {
		case nil:
			if env != "" {
				if s := getenv(env); s != "" {
					return s, nil
				}
			}
			return def, nil
		case string:
			return v, nil
		default:
			return "", fmt.Errorf("context %s: want a string, got %T", key, v)
		}
	}
	list := func(key, env string) ([]string, error) {
		var parts []string
		switch v := get(key).(type) {
		case nil:
			if env != "" {
				parts = strings.Split(getenv(env), ",")
			}
		case string:
			parts = strings.Split(v, ",")
		case []any:
			for i, e := range v {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("context %s[%d]: want a string, got %T", key, i, e)
				}
				parts = append(parts, s)
			}
		default:
			return nil, fmt.Errorf("context %s: want a list or a comma-separated string, got %T", key, v)
		}
		var out []string
		for _, p := range parts {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	}
	num := func(key string) (int, error) {
		switch v := get(key).(type) {
		case nil:
			return 0, nil
		case float64:
			if v != float64(int(v)) {
				return 0, fmt.Errorf("context %s: %v is not a whole number", key, v)
			}
			return int(v), nil
		case string:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("context %s: %q is not a whole number", key, v)
			}
			return n, nil
		default:
			return 0, fmt.Errorf("context %s: want a number, got %T", key, v)
		}
	}
	boolean := func(key string) (bool, error) {
		switch v := get(key).(type) {
		case nil:
			return false, nil
		case bool:
			return v, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return false, fmt.Errorf("context %s: %q is not true or false", key, v)
			}
			return b, nil
		default:
			return false, fmt.Errorf("context %s: want true or false, got %T", key, v)
		}
	}

	p := &c.props
	if c.stackName, err = str(ctxStackName, "", DefaultStackName); err != nil {
		return c, err
	}
	if p.ToolServers, err = list(ctxToolServers, stack.EnvToolServers); err != nil {
		return c, err
	}
	catalog, err := str(ctxModelCatalog, stack.EnvModelCatalog, DefaultModelCatalog)
	if err != nil {
		return c, err
	}
	if strings.HasPrefix(strings.TrimSpace(catalog), "{") {
		p.ModelCatalog = catalog
	} else {
		b, err := readFile(catalog)
		if err != nil {
			return c, fmt.Errorf("context %s: reading the model catalog: %w", ctxModelCatalog, err)
		}
		p.ModelCatalog = string(b)
	}
	if p.ModelName, err = str(ctxModelName, stack.EnvModel, ""); err != nil {
		return c, err
	}
	agentsPath, err := str(ctxAgents, "", "")
	if err != nil {
		return c, err
	}
	if p.Agents, err = readAgents(agentsPath, readFile); err != nil {
		return c, fmt.Errorf("context %s: %w", ctxAgents, err)
	}
	if p.BinDir, err = str(ctxBinDir, "", DefaultBinDir); err != nil {
		return c, err
	}
	if p.SliceBatchSize, err = num(ctxSliceBatchSize); err != nil {
		return c, err
	}
	if p.MaxConcurrency, err = num(ctxMaxConcurrency); err != nil {
		return c, err
	}
	if p.CallbackPrincipals, err = list(ctxCallbackPrincipals, ""); err != nil {
		return c, err
	}
	if p.BudgetModels, err = list(ctxBudgetModels, ""); err != nil {
		return c, err
	}
	if p.PublicCallbacks, err = boolean(ctxPublicCallbacks); err != nil {
		return c, err
	}
	if p.RetainData, err = boolean(ctxRetainData); err != nil {
		return c, err
	}
	if p.ReceiverConcurrency, err = num(ctxReceiverConc); err != nil {
		return c, err
	}
	if p.AlarmTopicARN, err = str(ctxAlarmTopicARN, "", ""); err != nil {
		return c, err
	}
	if p.CallbackBaseURL, err = str(ctxCallbackBaseURL, "", ""); err != nil {
		return c, err
	}
	if p.TreeBudgets, err = boolean(ctxTreeBudgets); err != nil {
		return c, err
	}
	if p.SharedTPM, err = boolean(ctxSharedTPM); err != nil {
		return c, err
	}
	if p.Telemetry, err = readOTel(get(ctxOTel)); err != nil {
		return c, err
	}
	return c, nil
}

// readOTel reads the otel context value: an object of strings (cdk.json),
// or NAME=VALUE pairs separated by commas (-c otel=...). Nil for none.
func readOTel(v any) (map[string]string, error) {
	out := map[string]string{}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		for k, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("context %s.%s: want a string, got %T", ctxOTel, k, e)
			}
			out[k] = s
		}
	case string:
		for _, pair := range strings.Split(v, ",") {
			if pair = strings.TrimSpace(pair); pair == "" {
				continue
			}
			k, val, ok := strings.Cut(pair, "=")
			if !ok {
				return nil, fmt.Errorf("context %s: %q is not NAME=VALUE", ctxOTel, pair)
			}
			out[strings.TrimSpace(k)] = strings.TrimSpace(val)
		}
	default:
		return nil, fmt.Errorf("context %s: want an object or NAME=VALUE pairs, got %T", ctxOTel, v)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// readAgents reads an agents document (DefaultAgents when path is empty,
// which may be missing: no agents), reads its instruction files relative to
// it, validates it and returns it as JSON with the instructions inline, for
// the slice function's environment. Errors name the file and the field.
func readAgents(path string, readFile func(string) ([]byte, error)) (string, error) {
	optional := path == ""
	if optional {
		path = DefaultAgents
	}
	b, err := readFile(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("reading the agents: %w", err)
	}
	bad := func(err error) error {
		var ae *runtime.AgentError
		if errors.As(err, &ae) && ae.Field != "" {
			return fmt.Errorf("%s: field %q: %s", path, ae.Field, ae.Reason)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	doc, err := runtime.DecodeAgentsDoc(b)
	if err != nil {
		return "", bad(err)
	}
	defs, err := doc.Resolve(filepath.Dir(path), readFile)
	if err != nil {
		return "", bad(err)
	}
	out := runtime.AgentsDoc{DefaultAgent: doc.DefaultAgent}
	for _, a := range defs {
		out.Agents = append(out.Agents, runtime.AgentDef{Agent: a})
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return "", fmt.Errorf("%s: encoding: %w", path, err)
	}
	return strings.TrimSpace(buf.String()), nil
}
