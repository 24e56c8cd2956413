package stack

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// The slice function's optional features (StackProps.TreeBudgets,
// SharedTPM) and the variables that turn them on (lambdafn.EnvTreeBudgets,
// EnvSharedTPM; a test checks they agree).
const (
	EnvTreeBudgets = "AGENTSLICE_TREE_BUDGETS"
	EnvSharedTPM   = "AGENTSLICE_SHARED_TPM"
)

// ledgerActions are what the ledger (dedup.Ledger) and the shared token
// bucket (dedup.Bucket) ask of the dedup table beyond the dedup marks.
var ledgerActions = []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}

// liveViewActions are what the receiver's live views (dedup.LiveViews) do
// on the dedup table; its transactions need the actions of their parts.
var liveViewActions = []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}

// otelName is an OpenTelemetry environment variable's name.
var otelName = regexp.MustCompile(`^OTEL_[A-Z0-9_]+$`)

// checkTelemetry validates StackProps.Telemetry.
func checkTelemetry(vars map[string]string) error {
	for _, k := range sortedKeys(vars) {
		switch {
		case !otelName.MatchString(k):
			return &PropsError{Field: "Telemetry", Reason: fmt.Sprintf("%q is not an OTEL_* variable (OTEL_ and capitals, digits or _)", k)}
		case vars[k] == "":
			return &PropsError{Field: "Telemetry", Reason: fmt.Sprintf("%s is empty: leave it out instead", k)}
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// addOptions wires the optional features: the ledger's and the bucket's
// switches and grants on the slice function, the OTEL_* variables on
// every function.
func (s *Stack) addOptions(p *StackProps) {
	on := func(enabled bool, name string) {
		if enabled {
			s.Slice.AddEnvironment(jsii.String(name), jsii.String("on"), nil)
		}
	}
	on(p.TreeBudgets, EnvTreeBudgets)
	on(p.SharedTPM, EnvSharedTPM)
	if p.TreeBudgets || p.SharedTPM {
		s.Table.Grant(s.Slice, *jsii.Strings(ledgerActions...)...)
	}
	for _, fn := range []awslambda.Function{s.Slice, s.Receiver, s.Relay} {
		for _, k := range sortedKeys(p.Telemetry) {
			fn.AddEnvironment(jsii.String(k), jsii.String(p.Telemetry[k]), nil)
		}
	}
}

// optionalEnv is the optional variables' names and values, run
// together, as the slice function's environment would hold them: what
// they take of its 4 KB (checkEnvBudget).
func optionalEnv(p *StackProps) string {
	var b strings.Builder
	if p.TreeBudgets {
		b.WriteString(EnvTreeBudgets + "on")
	}
	if p.SharedTPM {
		b.WriteString(EnvSharedTPM + "on")
	}
	for _, k := range sortedKeys(p.Telemetry) {
		b.WriteString(k + p.Telemetry[k])
	}
	return b.String()
}
