package stack

import (
	"path/filepath"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The functions: each name is the directory under StackProps.BinDir that
// holds its bootstrap, and the cmd/ package it is built from.
const (
	FnSlice      = "slicefn"
	FnReceiver   = "rapreceiver"
	FnDelayRelay = "delayrelay"
)

// Functions returns the function names.
func Functions() []string { return []string{FnSlice, FnReceiver, FnDelayRelay} }

// Function timeouts. The input and delay queues' visibility timeouts are
// six times the timeout of the function they trigger. The slice function's
// timeout follows from the models (SliceBudget, budget.go).
const (
	ReceiverTimeout = 10 * time.Second
	RelayTimeout    = 30 * time.Second
)

// fnSpec is what differs between the functions.
type fnSpec struct {
	id, name, description string
	memoryMB              float64
	timeout               time.Duration
	env                   map[string]*string
	// recursive allows Lambda to run the function in a recursive loop
	// (RecursiveLoop: Allow): it sends to a queue that triggers it,
	// directly or through the other functions (see stack.go).
	recursive bool
	// reserved is the function's reserved concurrency; 0 reserves none.
	reserved int
	// code replaces the asset binDir/<name> (the slice function with its
	// agents file, agentsfile.go).
	code awslambda.Code
}

// newFunction creates a function from the prebuilt binDir/<name>/bootstrap
// (provided.al2023, arm64), with its own log group and its own role. The
// role starts with nothing but writing to that log group (not the managed
// AWSLambdaBasicExecutionRole, which may create log groups anywhere); the
// caller grants the rest.
func newFunction(scope constructs.Construct, binDir string, spec fnSpec, removal awscdk.RemovalPolicy) awslambda.Function {
	logs := awslogs.NewLogGroup(scope, jsii.String(spec.id+"Logs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: removal,
	})
	role := awsiam.NewRole(scope, jsii.String(spec.id+"Role"), &awsiam.RoleProps{
		Description: jsii.String("agentslice " + spec.name),
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	logs.GrantWrite(role)
	code := spec.code
	if code == nil {
		code = awslambda.Code_FromAsset(jsii.String(filepath.Join(binDir, spec.name)), nil)
	}
	// Lambda's default (Terminate) stops a chain of SQS-triggered
	// invocations after about 16 hops; said explicitly either way, so the
	// template shows the choice.
	loop := awslambda.RecursiveLoop_TERMINATE
	if spec.recursive {
		loop = awslambda.RecursiveLoop_ALLOW
	}
	props := &awslambda.FunctionProps{
		Description:   jsii.String(spec.description),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          code,
		MemorySize:    jsii.Number(spec.memoryMB),
		Timeout:       seconds(spec.timeout),
		Environment:   &spec.env,
		Role:          role,
		LogGroup:      logs,
		RecursiveLoop: loop,
	}
	if spec.reserved > 0 {
		props.ReservedConcurrentExecutions = jsii.Number(spec.reserved)
	}
	return awslambda.NewFunction(scope, jsii.String(spec.id), props)
}
