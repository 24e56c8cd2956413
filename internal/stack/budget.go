package stack

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/model"
)

// The slice function's time budget. One slice runs at most one model
// completion, which must finish inside one invocation: otherwise every
// delivery of the thread's message times out and, after MaxReceiveCount
// receives, the message is dead-lettered (a long answer is lost). So the
// function timeout follows from the models the deployment runs:
//
//	timeout    = max(MinSliceTimeout, slowest WorstCaseCompletion + SliceOverhead)
//	             rounded up to a whole second
//	visibility = visibilityFactor (6) × timeout           (input queue)
//
// where a model's WorstCaseCompletion is FirstTokenAllowance +
// max_output_tokens / min_output_tokens_per_second (model.Config). A
// configuration whose timeout would pass Lambda's maximum (MaxFunctionTimeout,
// 900 s) is refused: lower max_output_tokens or use a faster model.
const (
	// MaxFunctionTimeout is Lambda's largest function timeout.
	MaxFunctionTimeout = 900 * time.Second
	// MinSliceTimeout is the least slice timeout, whatever the models:
	// loading a long history, a tool dispatch, continuations.
	MinSliceTimeout = 120 * time.Second
	// SliceOverhead is planned on top of the completion: loading the
	// thread, the commit, the dispatch of one tool call, and the handler's
	// margin before the deadline (serverless.DefaultMargin).
	SliceOverhead = 20 * time.Second
)

// SliceBudget is the slice function's timeout and what set it.
type SliceBudget struct {
	// Timeout is the slice function's timeout; the input queue's visibility
	// timeout is visibilityFactor times it.
	Timeout time.Duration
	// Model is the catalog model whose worst-case completion is the
	// longest ("" when MinSliceTimeout set the timeout), and Completion
	// that completion's planned time.
	Model      string
	Completion time.Duration
}

// Visibility is the input queue's visibility timeout.
func (b SliceBudget) Visibility() time.Duration { return visibilityFactor * b.Timeout }

// sliceBudget computes the budget for the catalog models named in use (all
// of cat's models when use is empty: any of them may be selected at run
// time). It returns a *PropsError when a completion cannot finish inside
// one slice.
//
// Hook for agent definitions (deploy/agents.json): pass the models the
// agents name as use (StackProps.BudgetModels), so that a catalog entry no
// agent runs does not raise the timeout.
func sliceBudget(cat *model.Catalog, use []string) (SliceBudget, error) {
	models := cat.Models
	if len(use) > 0 {
		models = nil
		for _, name := range use {
			m, err := cat.Lookup(name)
			if err != nil {
				return SliceBudget{}, &PropsError{Field: "BudgetModels", Reason: err.Error()}
			}
			models = append(models, m)
		}
	}
	b := SliceBudget{Timeout: MinSliceTimeout}
	var over []string
	for _, m := range models {
		c := m.WorstCaseCompletion()
		need := (c + SliceOverhead + time.Second - 1).Truncate(time.Second)
		if need > MaxFunctionTimeout {
			over = append(over, fmt.Sprintf("%s (%d output tokens at %v tokens/s: %v, plus %v overhead)",
				label(m), m.MaxOutputTokens, rate(m), c, SliceOverhead))
			continue
		}
		if need > b.Timeout || (need == b.Timeout && b.Model == "") {
			b = SliceBudget{Timeout: need, Model: label(m), Completion: c}
		}
	}
	if len(over) > 0 {
		sort.Strings(over)
		return SliceBudget{}, &PropsError{Field: "ModelCatalog", Reason: fmt.Sprintf(
			"a completion cannot finish inside one slice (Lambda's %v maximum) for: %s; lower max_output_tokens or raise min_output_tokens_per_second only if the model really streams that fast",
			MaxFunctionTimeout, strings.Join(over, "; "))}
	}
	return b, nil
}

func label(m model.Config) string {
	if m.Name != "" {
		return m.Name
	}
	return m.ModelID
}

func rate(m model.Config) float64 {
	if m.MinOutputTokensPerSecond > 0 {
		return m.MinOutputTokensPerSecond
	}
	return model.DefaultMinOutputTokensPerSecond
}
