package serverless_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/serverless"
	"github.com/agentslice/agentslice/internal/serverless/lambdatest"
)

// A pinned thread on the slice function keeps the instructions it started
// with across a definition change and a cold start, while an unpinned one
// switches: each "deploy" stores the agents in DSQL next to history
// (PostgreSQL stands in, as `agentslice migrate -agents` does) and starts a
// new slice function (a new pool, an agent set holding only the new
// definition), so the pinned thread's version can only come from the
// agent_versions table.
func TestPinnedThreadThroughAColdStart(t *testing.T) {
	st := lambdatest.NewStack(t)
	for _, kv := range st.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	catalog, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(lambdafn.EnvModelCatalog, string(catalog))
	t.Setenv(lambdafn.EnvToolServers, "")
	t.Setenv(lambdafn.EnvCallbackURL, "http://127.0.0.1:1/callback") // no tool here calls back
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, st.PGDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	store := dsql.New(pool, dsql.Options{})

	english := runtime.Agent{Name: "helper", Instructions: "Answer in English."}
	french := runtime.Agent{Name: "helper", Instructions: "Answer in French."}
	deploy := func(a runtime.Agent) *serverless.SliceFunction {
		t.Helper()
		if err := store.PutAgents(ctx, []runtime.StoredAgent{runtime.NewStoredAgent(a, time.Now())}); err != nil {
			t.Fatal(err)
		}
		doc, _ := json.Marshal(runtime.AgentsDoc{Agents: []runtime.AgentDef{{Agent: a}}})
		t.Setenv(lambdafn.EnvAgents, string(doc))
		cfg, err := serverless.LoadSliceConfig(os.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		fn, err := serverless.BuildSliceFunction(ctx, cfg, lambdafn.Options{Stdout: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		return fn
	}
	send := func(fn *serverless.SliceFunction, msgs ...string) {
		t.Helper()
		var recs []events.SQSMessage
		for i, m := range msgs {
			var g struct {
				Thread string `json:"thread_id"`
			}
			_ = json.Unmarshal([]byte(m), &g)
			recs = append(recs, rec(fmt.Sprintf("sqs-%d-%d", time.Now().UnixNano(), i), g.Thread, m, 1))
		}
		resp, err := fn.Handle(ctx, events.SQSEvent{Records: recs})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("handle: %v, failures %v", err, failures(resp))
		}
	}
	user := func(thread, id, extra string) string {
		return fmt.Sprintf(`{"v":1,"id":%q,"thread_id":%q,"kind":"user","text":"hi"%s}`, id, thread, extra)
	}
	load := func(thread string) *runtime.Thread {
		t.Helper()
		th, err := store.Load(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	markers := func(th *runtime.Thread) (n int) {
		for _, it := range th.Items {
			if it.Kind == runtime.ItemMarker && strings.Contains(it.Text, "now applies") {
				n++
			}
		}
		return n
	}

	fn := deploy(english)
	send(fn, user("pinned", "p1", `,"agent":"helper","upgrade":"pinned"`), user("free", "f1", `,"agent":"helper"`))
	fn.Close()
	for _, id := range []string{"pinned", "free"} {
		if th := load(id); th.State.AgentHash != english.Hash() {
			t.Fatalf("%s ran version %s, want the first definition's %s", id, th.State.AgentHash, english.Hash())
		}
	}

	fn = deploy(french) // a new definition, a cold start
	defer fn.Close()
	send(fn, user("pinned", "p2", ""), user("free", "f2", ""))
	pinned, free := load("pinned"), load("free")
	if pinned.State.Upgrade != runtime.UpgradePinned || pinned.State.AgentHash != english.Hash() || markers(pinned) != 0 {
		t.Fatalf("pinned thread after the change: policy %q, version %s (want %s), %d version markers (want 0)",
			pinned.State.Upgrade, pinned.State.AgentHash, english.Hash(), markers(pinned))
	}
	if free.State.AgentHash != french.Hash() || markers(free) != 1 {
		t.Fatalf("unpinned thread after the change: version %s (want %s), %d version markers (want 1)", free.State.AgentHash, french.Hash(), markers(free))
	}
	if own := pinned.Own(); len(own) != 4 || own[3].Kind != runtime.ItemAssistant {
		last := own[len(own)-1]
		t.Fatalf("the pinned thread's second turn did not answer: %d items, the last %s %q", len(own), last.Kind, last.Text)
	}
	// The version the pinned thread runs is the English one, read from DSQL.
	kept, err := store.LoadAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range kept {
		if v.Hash == pinned.State.AgentHash && v.Definition.Instructions != "Answer in English." {
			t.Fatalf("the pinned version holds %q", v.Definition.Instructions)
		}
	}
}
