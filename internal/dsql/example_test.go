package dsql_test

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/runtime"
)

// A Lambda builds the pool once, before lambda.Start, and every warm
// invocation reuses it. Credentials come from the Lambda's role (here
// any aws.CredentialsProvider, e.g. from config.LoadDefaultConfig).
func ExampleNewPool() {
	var creds aws.CredentialsProvider // cfg.Credentials from config.LoadDefaultConfig
	cfg := dsql.Config{
		Dialect:     dsql.DSQL,
		Endpoint:    "abcdefghijklmnopqrstuvwxyz.dsql.us-east-1.on.aws",
		Region:      "us-east-1",
		User:        "agentslice",
		Credentials: creds,
	}
	if err := cfg.Validate(); err != nil {
		log.Fatal(err) // names the missing or wrong field
	}
	pool, err := dsql.NewPool(context.Background(), cfg) // connects lazily
	if err != nil {
		log.Fatal(err)
	}
	var history runtime.HistoryStore = dsql.New(pool, dsql.Options{})
	_ = history // hand it to runtime.Engine; then lambda.Start(handler)
}

// The `agentslice migrate` command creates or upgrades the schema, as a
// deployment step.
func ExampleMigrate() {
	ctx := context.Background()
	pool, err := dsql.NewPool(ctx, dsql.Config{Dialect: dsql.Postgres, DSN: "postgres://agentslice@127.0.0.1:54329/agentslice?sslmode=disable"})
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	if err := dsql.Migrate(ctx, pool, dsql.Postgres); err != nil {
		log.Fatal(err)
	}
}
