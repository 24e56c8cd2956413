// Command cdkapp is the AWS CDK app of an agentslice deployment: it reads
// the CDK context (cdk.json, `-c key=value`) into stack.StackProps, defines
// the stack (internal/stack) and synthesizes the cloud assembly.
//
// Run it through the CDK CLI (`make synth`, `make deploy`), which applies
// cdk.json's feature flags, or directly with `CDK_OUTDIR=cdk.out go run
// ./cmd/cdkapp` (no cdk.json flags then). The function binaries must have
// been built first (`make build`); a missing one is reported by name.
//
// Context keys: stackName, toolServers, modelCatalog, modelName, binDir,
// sliceBatchSize, maxConcurrency, callbackPrincipals, publicCallbacks,
// receiverConcurrency, callbackBaseUrl, alarmTopicArn, budgetModels, retainData (see
// config.go). It must not read AWS credentials or call AWS: synthesis is
// offline.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentslice/agentslice/internal/stack"
)

func main() {
	os.Exit(run())
}

func run() int {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	get := func(key string) any { return app.Node().TryGetContext(jsii.String(key)) }
	cfg, err := readConfig(get, os.Getenv, os.ReadFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cdkapp:", err)
		return 1
	}
	cfg.props.Description = jsii.String("agentslice: serverless agent runtime (SQS FIFO, Lambda, DSQL, DynamoDB)")
	if _, err := stack.New(app, cfg.stackName, cfg.props); err != nil {
		fmt.Fprintln(os.Stderr, "cdkapp:", err)
		return 1
	}
	app.Synth(nil)
	return 0
}
