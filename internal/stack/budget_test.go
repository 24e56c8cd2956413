package stack

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/model"
)

func TestSliceBudget(t *testing.T) {
	t.Parallel()
	m := func(name string, tokens int, rate float64) string {
		return `{"name":"` + name + `","provider":"openai","model_id":"` + name + `","context_window":1000000,` +
			`"max_output_tokens":` + strconv.Itoa(tokens) + `,"min_output_tokens_per_second":` + strconv.FormatFloat(rate, 'g', -1, 64) + `}`
	}
	var names []string
	m0 := m
	m = func(name string, tokens int, rate float64) string {
		names = append(names, name)
		return m0(name, tokens, rate)
	}
	catalog := func(models ...string) *model.Catalog {
		defer func() { names = nil }()
		c, err := model.DecodeCatalog([]byte(`{"default":"` + names[0] + `","models":[` + strings.Join(models, ",") + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		name        string
		cat         *model.Catalog
		use         []string
		wantTimeout time.Duration // 0: refused
		wantModel   string
	}{
		// 1000/100 = 10 s + 15 s first token + 20 s overhead = 45 s < 120 s.
		{"fast model keeps the floor", catalog(m("fast", 1000, 100)), nil, 120 * time.Second, ""},
		// 8192/20 = 409.6 -> 410 s + 15 + 20 = 445 s.
		{"slow long answer", catalog(m("fast", 1000, 100), m("slow", 8192, 20)), nil, 445 * time.Second, "slow"},
		// Only the models agents use count.
		{"budget models", catalog(m("fast", 1000, 100), m("slow", 8192, 20)), []string{"fast"}, 120 * time.Second, ""},
		// 16000/20 = 800 + 35 = 835 s: still fits.
		{"just fits", catalog(m("big", 16000, 20)), nil, 835 * time.Second, "big"},
		// 8192/10 = 820 + 35 = 855: fits; 8192/9 = 911 + 35 = 946: refused.
		{"cannot finish in one slice", catalog(m("ok", 8192, 10), m("tooslow", 8192, 9)), nil, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := sliceBudget(tc.cat, tc.use)
			if tc.wantTimeout == 0 {
				var pe *PropsError
				if !errors.As(err, &pe) || pe.Field != "ModelCatalog" || !strings.Contains(err.Error(), "tooslow") ||
					strings.Contains(err.Error(), "ok (") || !strings.Contains(err.Error(), "cannot finish inside one slice") {
					t.Fatalf("got %+v, %v; want a ModelCatalog error naming tooslow only", b, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Timeout != tc.wantTimeout || b.Model != tc.wantModel {
				t.Fatalf("got %+v, want timeout %v set by %q", b, tc.wantTimeout, tc.wantModel)
			}
			if b.Visibility() != 6*tc.wantTimeout {
				t.Fatalf("visibility %v, want 6 x %v", b.Visibility(), tc.wantTimeout)
			}
		})
	}
	if _, err := sliceBudget(catalog(m("a", 10, 10)), []string{"nope"}); err == nil || !strings.Contains(err.Error(), "BudgetModels") {
		t.Fatalf("unknown budget model: %v", err)
	}
}

// TestShippedCatalogBudget pins the timeout the repository's
// deploy/models.json deploys with (README, "Deploy to AWS").
func TestShippedCatalogBudget(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../deploy/models.json")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := model.DecodeCatalog(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sliceBudget(cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	// claude-sonnet-4: 8192 tokens at 20/s = 410 s, + 15 s + 20 s.
	if got.Timeout != 445*time.Second || got.Model != "claude-sonnet-4" {
		t.Fatalf("got %+v", got)
	}
}

func TestCheckRefusesASliceThatCannotFinish(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	if err := fakeBinDir(bin); err != nil {
		t.Fatal(err)
	}
	p := StackProps{BinDir: bin, ModelCatalog: `{"default":"x","models":[{"name":"x","provider":"openai","model_id":"x",` +
		`"context_window":100000,"max_output_tokens":32000,"min_output_tokens_per_second":30}]}`}
	if _, err := p.Check(); err == nil || !strings.Contains(err.Error(), "cannot finish inside one slice") {
		t.Fatalf("got %v", err)
	}
}

// With agents, the budget covers the models they run (and the default
// model, for agents naming none), not every catalog entry.
func TestBudgetModelsFromAgents(t *testing.T) {
	t.Parallel()
	cat, err := model.DecodeCatalog([]byte(`{"default":"fast","models":[
	  {"name":"fast","provider":"openai","model_id":"f","context_window":100000,"max_output_tokens":1000,"min_output_tokens_per_second":100},
	  {"name":"mid","provider":"openai","model_id":"m","context_window":100000,"max_output_tokens":4000,"min_output_tokens_per_second":20},
	  {"name":"slow","provider":"openai","model_id":"s","context_window":100000,"max_output_tokens":32000,"min_output_tokens_per_second":10}]}`))
	if err != nil {
		t.Fatal(err)
	}
	agents := `{"agents":[{"name":"a","instructions":"x"},{"name":"b","instructions":"y","model":"mid"}],"default_agent":"a"}`
	p := StackProps{Agents: agents}
	if got := p.budgetModels(cat); !slices.Equal(got, []string{"fast", "mid"}) {
		t.Fatalf("budget models %q", got)
	}
	// "slow" (3,235 s) is in the catalog but no agent runs it: accepted.
	b, err := sliceBudget(cat, p.budgetModels(cat))
	if err != nil || b.Model != "mid" || b.Timeout != 235*time.Second {
		t.Fatalf("budget %+v, %v", b, err)
	}
	// Without agents every catalog model counts, and "slow" cannot finish.
	if _, err := sliceBudget(cat, (&StackProps{}).budgetModels(cat)); err == nil {
		t.Fatal("a catalog with a model that cannot finish was accepted without agents")
	}
	p.BudgetModels = []string{"fast"}
	if got := p.budgetModels(cat); !slices.Equal(got, []string{"fast"}) {
		t.Fatalf("explicit budget models %q", got)
	}
}
