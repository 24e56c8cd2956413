package dsql_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/runtime"
)

// A Lambda builds the pool once, before lambda.Start, and every warm
// invocation reuses it. Credentials come from the Lambda's role (any
// aws.CredentialsProvider, e.g. cfg.Credentials from
// config.LoadDefaultConfig); a missing one is named before any connection.
// NewPool connects lazily. (`agentslice migrate` then creates or upgrades
// the schema with dsql.Migrate; TestMigrate runs it on PostgreSQL.)
func ExampleNewPool() {
	cfg := dsql.Config{
		Dialect:  dsql.DSQL,
		Endpoint: "abcdefghijklmnopqrstuvwxyz.dsql.us-east-1.on.aws",
		Region:   "us-east-1",
		User:     "agentslice",
	}
	fmt.Println(cfg.Validate())
	var creds aws.CredentialsProvider = credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")
	cfg.Credentials = creds
	fmt.Println(cfg.Validate())
	pool, err := dsql.NewPool(context.Background(), cfg)
	fmt.Println(err)
	defer pool.Close()
	var history runtime.HistoryStore = dsql.New(pool, dsql.Options{})
	_ = history // hand it to runtime.Engine; then lambda.Start(handler)
	// Output:
	// dsql: config: Credentials: required for dialect "dsql" (signs the IAM auth token for each new connection)
	// <nil>
	// <nil>
}
