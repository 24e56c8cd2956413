package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/testenv"
)

// budgetCatalog is one priced scripted model whose every completion uses
// 100 tokens (60 in, 40 out).
func budgetCatalog(t *testing.T) *model.Catalog {
	t.Helper()
	var cat model.Catalog
	if err := json.Unmarshal([]byte(`{"default": "m", "models": [
	  {"name": "m", "provider": "scripted", "model_id": "m", "context_window": 100000, "max_output_tokens": 40,
	   "price": {"input": 3, "output": 15},
	   "scripted": {"script": {"default": [
	     {"text": "one", "usage": {"input": 60, "output": 40, "total": 100}},
	     {"text": "two", "usage": {"input": 60, "output": 40, "total": 100}},
	     {"text": "three", "usage": {"input": 60, "output": 40, "total": 100}}]}}}]}`), &cat); err != nil {
		t.Fatal(err)
	}
	return &cat
}

// A thread created with a tree budget pauses at it with a user_choice
// (status waiting_for_choice, spend in GET /threads/{id}), keeps waiting
// through a restart of serve's durable store, and answering "raise"
// through the choices endpoint runs the model again.
func TestBudgetPauseAndRaiseThroughTheAPI(t *testing.T) {
	t.Parallel()
	testBudgetPauseAndRaise(t, Config{Models: budgetCatalog(t), Data: t.TempDir()}, "thr_budget")
}

// The same on serve's PostgreSQL store: the tree's account is in its
// tree_ledger table, so the restart keeps the tree's spend and the raise
// finds it (with the ledger in memory the tree's spend restarted at 0).
func TestBudgetPauseAndRaiseOnPostgres(t *testing.T) {
	t.Parallel()
	dsn := testenv.Need(t, "AGENTSLICE_TEST_PG_DSN")
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	testBudgetPauseAndRaise(t, Config{Models: budgetCatalog(t), DSN: dsn}, "thr_budget_"+hex.EncodeToString(b))
}

func testBudgetPauseAndRaise(t *testing.T, cfg Config, thread string) {
	srv := startServer(t, cfg)
	events := openStream(t, srv.URL()+"/threads/"+thread+"/events")
	postMessage(t, srv, thread, `{"text":"hi","budget":{"tokens":150,"scope":"tree"}}`)
	waitIdle(t, srv)
	postMessage(t, srv, thread, `{"text":"again"}`)
	// The console sees the pause as a choice to answer, like a tool's.
	if ev := events.nextOf(t, "user_choice"); ev.Data.Choice == nil || len(ev.Data.Choice.Choices) != 2 {
		t.Fatalf("the budget pause's event %+v carries no choice", ev.Data)
	}
	events.close()
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	if th.Status != "waiting_for_choice" || th.Choice == nil || len(th.Choice.Choices) != 2 {
		t.Fatalf("status %s, choice %+v: want a budget choice", th.Status, th.Choice)
	}
	b := th.Budget
	if b == nil || b.Waiting != "tree" || b.Spent.Tokens != 100 || b.Spent.USD != (60*3+40*15)/1e6 ||
		b.Tree == nil || b.Tree.Spent.Tokens != 100 || b.Tree.Limit == nil || b.Tree.Limit.Tokens != 150 {
		t.Fatalf("budget %+v (tree %+v)", b, b.Tree)
	}
	srv.Stop()

	srv = startServer(t, cfg)
	th = getThread(t, srv, thread)
	if th.Status != "waiting_for_choice" || th.Choice == nil {
		t.Fatalf("after restart: status %s, choice %+v", th.Status, th.Choice)
	}
	var e apiError
	url := srv.URL() + "/threads/" + thread + "/choices/" + th.Choice.CallID
	if code := do(t, http.MethodPost, url, `{"selected": 5}`, &e); code != http.StatusBadRequest || e.Field != "selected" {
		t.Fatalf("a bad answer: %d %+v", code, e)
	}
	if code := do(t, http.MethodPost, url, `{"selected": 0}`, nil); code != http.StatusOK {
		t.Fatalf("answer: %d", code)
	}
	waitIdle(t, srv)
	th = getThread(t, srv, thread)
	if th.Status != "idle" || th.Items[len(th.Items)-1].Text != "two" || th.Budget.Tree.Spent.Tokens != 200 {
		t.Fatalf("after raising: status %s, last %q, budget %+v", th.Status, th.Items[len(th.Items)-1].Text, th.Budget.Tree)
	}
}

// POST /threads/{id}/budget sets a thread's limit; a waiting thread goes on
// once it is raised enough; bad bodies are refused naming the field.
func TestSetBudgetRoute(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Models: budgetCatalog(t)})
	const thread = "thr_limit"
	url := srv.URL() + "/threads/" + thread + "/budget"
	var e apiError
	for body, field := range map[string]string{`{}`: "tokens", `{"tokens": -1}`: "budget", `{"tokens": 5, "scope": "forest"}`: "budget"} {
		if code := do(t, http.MethodPost, url, body, &e); code != http.StatusBadRequest || e.Field != field {
			t.Fatalf("POST %s: %d %+v, want 400 naming %s", body, code, e, field)
		}
	}
	postMessage(t, srv, thread, `{"text":"hi"}`)
	waitIdle(t, srv)
	if code := do(t, http.MethodPost, url, `{"tokens": 120}`, nil); code != http.StatusAccepted {
		t.Fatalf("set: %d", code)
	}
	waitIdle(t, srv)
	postMessage(t, srv, thread, `{"text":"more"}`)
	waitIdle(t, srv)
	if th := getThread(t, srv, thread); th.Budget == nil || th.Budget.Waiting != "thread" {
		t.Fatalf("no thread budget wait: %+v", th.Budget)
	}
	if code := do(t, http.MethodPost, url, `{"tokens": 1000, "add": true}`, nil); code != http.StatusAccepted {
		t.Fatalf("raise: %d", code)
	}
	waitIdle(t, srv)
	th := getThread(t, srv, thread)
	if th.Budget.Waiting != "" || th.Items[len(th.Items)-1].Text != "two" || th.Budget.Limit.Tokens != 1120 {
		t.Fatalf("after the raise: %+v, last %q", th.Budget, th.Items[len(th.Items)-1].Text)
	}
}
