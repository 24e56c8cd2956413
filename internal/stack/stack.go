package stack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdsql"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentslice/agentslice/internal/model"
)

// Stack is an agentslice deployment.
type Stack struct {
	awscdk.Stack

	Queues  *Queues
	Table   awsdynamodb.TableV2
	Cluster awsdsql.CfnCluster
	// Budget is the slice function's timeout and what set it (budget.go).
	Budget    SliceBudget
	Keyring   awssecretsmanager.Secret
	Scheduler *Scheduler

	Slice, Receiver, Relay awslambda.Function
	// ReceiverURL is the receiver's Function URL (IAM auth).
	ReceiverURL awslambda.FunctionUrl
	// CallbackInvokePolicy allows calling ReceiverURL with IAM auth, for
	// tool servers' roles in this account (nil with PublicCallbacks).
	CallbackInvokePolicy awsiam.ManagedPolicy
	// Alarms watch the dead-letter queues and the slice function
	// (alarms.go).
	Alarms *Alarms
}

// New validates props and defines the stack in scope. Bad props give a
// *PropsError and define nothing.
func New(scope constructs.Construct, id string, props StackProps) (*Stack, error) {
	cat, err := props.Check()
	if err != nil {
		return nil, err
	}
	budget, err := sliceBudget(cat, props.budgetModels(cat))
	if err != nil {
		return nil, err
	}
	var catalog bytes.Buffer
	if err := json.Compact(&catalog, []byte(props.ModelCatalog)); err != nil {
		return nil, &PropsError{Field: "ModelCatalog", Reason: err.Error()}
	}
	toolServers := strings.Join(props.ToolServers, ",")
	var agents bytes.Buffer
	if strings.TrimSpace(props.Agents) != "" {
		if err := json.Compact(&agents, []byte(props.Agents)); err != nil {
			return nil, &PropsError{Field: "Agents", Reason: err.Error()}
		}
	}
	// Without the agents: agents that do not fit move to a file in the
	// slice function's asset (agentsfile.go).
	// The optional variables (options.go) count with the model name.
	optional := props.ModelName + optionalEnv(&props)
	if err := checkEnvBudget(catalog.String(), toolServers, optional, ""); err != nil {
		return nil, err
	}
	inlineAgents := agentsInEnv(catalog.String(), toolServers, optional, agents.String())
	batch, maxConc := props.SliceBatchSize, props.MaxConcurrency
	if batch == 0 {
		batch = DefaultSliceBatchSize
	}
	if maxConc == 0 {
		maxConc = DefaultMaxConcurrency
	}

	st := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	// Only the stores honour RetainData: queues, functions, logs, the
	// secret and the schedule group go with the stack.
	removal := awscdk.RemovalPolicy_DESTROY
	s := &Stack{Stack: st, Budget: budget}
	s.Queues = newQueues(st, budget.Timeout, RelayTimeout, removal)
	s.Table = newDedupTable(st, props.RetainData)
	s.Cluster = newCluster(st, props.RetainData)
	s.Keyring = newKeyringSecret(st)
	s.Scheduler = newScheduler(st, s.Queues.Input, s.Queues.WakeupDLQ, removal)
	q := s.Queues

	// The receiver first: its URL goes into the slice function's
	// environment, and it depends on nothing of the slice function.
	s.Receiver = newFunction(st, props.BinDir, fnSpec{
		id: "ReceiverFunction", name: FnReceiver,
		description: "agentslice: RAP callback receiver (verifies signed callback URLs, enqueues results)",
		memoryMB:    256, timeout: ReceiverTimeout,
		reserved: props.receiverConcurrency(),
		env: map[string]*string{
			EnvInputQueueURL:      q.Input.QueueUrl(),
			EnvCallbackKeysSecret: s.Keyring.SecretArn(),
			// The class of a thread whose callback URL does not carry it
			// (URLs minted before every URL did) is read from DSQL as
			// DSQLReaderRole, which may read the thread rows only.
			EnvDSQLEndpoint: s.Cluster.AttrEndpoint(),
			EnvDSQLUser:     jsii.String(DSQLReaderRole),
			// The live views of calls that go on in the background
			// (a build streaming its output) are kept in the dedup
			// table and published to the output queue: display only,
			// no slice per view (dedup.LiveViews).
			EnvDedupTable:     s.Table.TableName(),
			EnvOutputQueueURL: q.Output.QueueUrl(),
		},
	}, removal)
	auth := awslambda.FunctionUrlAuthType_AWS_IAM
	if props.PublicCallbacks {
		auth = awslambda.FunctionUrlAuthType_NONE
	}
	s.ReceiverURL = s.Receiver.AddFunctionUrl(&awslambda.FunctionUrlOptions{AuthType: auth})
	q.Input.GrantSendMessages(s.Receiver)
	q.Output.GrantSendMessages(s.Receiver)
	s.Table.Grant(s.Receiver, *jsii.Strings(liveViewActions...)...)
	grantReadSecret(s.Receiver, s.Keyring)
	s.Receiver.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("dsql:DbConnect"), Resources: &[]*string{s.Cluster.AttrResourceArn()},
	}))
	// GrantInvokeUrl grants both lambda:InvokeFunctionUrl and
	// lambda:InvokeFunction (InvokedViaFunctionUrl); see callbacks.go.
	for _, arn := range props.CallbackPrincipals {
		s.Receiver.GrantInvokeUrl(awsiam.NewArnPrincipal(jsii.String(arn)))
	}
	if !props.PublicCallbacks {
		s.CallbackInvokePolicy = newCallbackInvokePolicy(st, s.Receiver)
	}

	// The slice function and the relay send to queues that trigger them
	// (continuations, spawns, reports to the input queue; sleeps through
	// the delay queue and the relay back into it): Lambda's recursive loop
	// detection would stop a thread after about 16 such hops in a row. The
	// runtime's own caps bound those chains instead (docs/design.md, "The
	// AWS deployment"). The receiver is only invoked through its Function
	// URL, which loop detection does not follow: it keeps the default.
	sliceSpec := fnSpec{
		id: "SliceFunction", name: FnSlice,
		description: "agentslice: runs one slice per thread for the messages of the FIFO input queue",
		memoryMB:    512, timeout: budget.Timeout, recursive: true,
		env: map[string]*string{
			EnvInputQueueURL:      q.Input.QueueUrl(),
			EnvDLQURL:             q.InputDLQ.QueueUrl(),
			EnvOutputQueueURL:     q.Output.QueueUrl(),
			EnvDelayQueueURL:      q.Delay.QueueUrl(),
			EnvDedupTable:         s.Table.TableName(),
			EnvDSQLEndpoint:       s.Cluster.AttrEndpoint(),
			EnvDSQLUser:           jsii.String(DSQLAppRole),
			EnvSchedulerRoleARN:   s.Scheduler.Role.RoleArn(),
			EnvScheduleGroup:      s.Scheduler.Group.ScheduleGroupName(),
			EnvScheduleDLQARN:     q.WakeupDLQ.QueueArn(),
			EnvModelCatalog:       jsii.String(catalog.String()),
			EnvModel:              jsii.String(props.ModelName),
			EnvToolServers:        jsii.String(toolServers),
			EnvCallbackURL:        callbackURL(s.ReceiverURL, props.CallbackBaseURL),
			EnvCallbackKeysSecret: s.Keyring.SecretArn(),
		},
	}
	var bundle *agentsBundle
	if inlineAgents {
		sliceSpec.env[EnvAgents] = jsii.String(agents.String())
	} else {
		sliceSpec.env[EnvAgentsFile] = jsii.String(AgentsFileName)
		sliceSpec.code, bundle = agentsAssetCode(props.BinDir, agents.Bytes())
	}
	s.Slice = newFunction(st, props.BinDir, sliceSpec, removal)
	if bundle != nil && bundle.err != nil {
		return nil, bundleError(bundle)
	}
	s.Slice.AddEventSource(awslambdaeventsources.NewSqsEventSource(q.Input, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(batch),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(maxConc),
	}))
	s.grantSlice(cat)

	s.Relay = newFunction(st, props.BinDir, fnSpec{
		id: "DelayRelayFunction", name: FnDelayRelay,
		description: "agentslice: relays due wake-ups from the delay queue into the FIFO input queue",
		memoryMB:    128, timeout: RelayTimeout, recursive: true,
		env: map[string]*string{
			EnvInputQueueURL: q.Input.QueueUrl(),
		},
	}, removal)
	// The relay also delivers the wake-ups Scheduler dead-lettered
	// (timers.DecodeWakeUp reads both bodies).
	for _, src := range []awssqs.Queue{q.Delay, q.WakeupDLQ} {
		s.Relay.AddEventSource(awslambdaeventsources.NewSqsEventSource(src, &awslambdaeventsources.SqsEventSourceProps{
			BatchSize:               jsii.Number(10),
			ReportBatchItemFailures: jsii.Bool(true),
		}))
	}
	q.Input.GrantSendMessages(s.Relay)
	s.addBackgroundQueue(backgroundConcurrency(props.BackgroundMaxConcurrency, maxConc), batch)
	s.addOptions(&props)

	s.addAlarms(props.AlarmTopicARN)
	s.addOutputs()
	s.checkNag()
	return s, nil
}

// callbackURL is the base of the callback URLs the slice function signs:
// the receiver's Function URL, or base (a front of it) when set.
func callbackURL(fnURL awslambda.FunctionUrl, base string) *string {
	if base != "" {
		return jsii.String(base + CallbackPath)
	}
	return awscdk.Fn_Join(jsii.String(""), &[]*string{fnURL.Url(), jsii.String(CallbackPath)})
}

// grantSlice gives the slice function what it uses and nothing else.
// Consuming the input queue is granted by its event source.
func (s *Stack) grantSlice(cat *model.Catalog) {
	fn, q := s.Slice, s.Queues
	for _, queue := range []awssqs.Queue{q.Input, q.InputDLQ, q.Output, q.Delay} {
		queue.GrantSendMessages(fn)
	}
	s.Table.Grant(fn, jsii.String("dynamodb:BatchGetItem"), jsii.String("dynamodb:PutItem"))
	grantReadSecret(fn, s.Keyring)
	allow := func(actions []string, resources []*string, conditions map[string]interface{}) {
		st := &awsiam.PolicyStatementProps{Actions: jsii.Strings(actions...), Resources: &resources}
		if conditions != nil {
			st.Conditions = &conditions
		}
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(st))
	}
	// IAM auth as the least-privilege role DSQLAppRole (DML only), never
	// as admin: `agentslice migrate`, run with the operator's credentials,
	// keeps DbConnectAdmin.
	allow([]string{"dsql:DbConnect"}, []*string{s.Cluster.AttrResourceArn()}, nil)
	// One-time schedules for long sleeps, only in the stack's group, and
	// only run as the scheduler role.
	allow([]string{"scheduler:CreateSchedule", "scheduler:DeleteSchedule"}, []*string{s.Scheduler.scheduleARNs(s.Stack)}, nil)
	allow([]string{"iam:PassRole"}, []*string{s.Scheduler.Role.RoleArn()}, map[string]interface{}{
		"StringEquals": map[string]interface{}{"iam:PassedToService": "scheduler.amazonaws.com"},
	})
	if arns := bedrockResources(cat); len(arns) > 0 {
		resources := make([]*string, len(arns))
		for i, arn := range arns {
			resources[i] = jsii.String(arn)
			if strings.Contains(arn, "${") {
				resources[i] = awscdk.Fn_Sub(resources[i], nil)
			}
		}
		allow([]string{"bedrock:InvokeModelWithResponseStream"}, resources, nil)
	}
}

// grantReadSecret allows reading the secret's value, and nothing else
// (Secret.GrantRead adds DescribeSecret).
func grantReadSecret(fn awslambda.Function, secret awssecretsmanager.Secret) {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
		Resources: jsii.Strings(*secret.SecretArn()),
	}))
}

// checkEnvBudget fails when the slice function's environment would exceed
// Lambda's 4 KB with the deploy-time values estimated generously. other is
// the model name followed by the optional variables' names and values
// (optionalEnv).
func checkEnvBudget(catalog, toolServers, other, agents string) error {
	size := len(catalog) + len(toolServers) + len(other) + len(agents)
	for _, name := range []string{EnvInputQueueURL, EnvBackgroundQueueURL, EnvDLQURL, EnvOutputQueueURL, EnvDelayQueueURL,
		EnvDedupTable, EnvDSQLEndpoint, EnvDSQLUser, EnvSchedulerRoleARN, EnvScheduleGroup, EnvScheduleDLQARN, EnvModelCatalog,
		EnvModel, EnvAgents, EnvAgentsFile, EnvToolServers, EnvCallbackURL, EnvCallbackKeysSecret} {
		size += len(name)
	}
	const deployValues = 11 // the variables whose values are known only at deploy time
	size += deployValues * deployValueBytes
	if size > lambdaEnvBytes {
		return &PropsError{Field: "ModelCatalog", Reason: fmt.Sprintf(
			"the slice function's environment would be about %d bytes, over Lambda's %d: the catalog (%d bytes compacted) and the tool server list (%d bytes) must shrink (agents, %d bytes, that do not fit ship as a file)",
			size, lambdaEnvBytes, len(catalog), len(toolServers), len(agents))}
	}
	return nil
}
