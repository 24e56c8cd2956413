package stack

// Assertions on the synthesized template. jsii (the bridge to the CDK's
// JavaScript) starts one Node process per test binary: these tests never
// call t.Parallel (jsii breaks), share one synthesized App (a synth costs
// seconds), and turn the panics of failed CDK assertions into test errors.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fx.dir != "" {
		os.RemoveAll(fx.dir)
	}
	jsii.Close()
	os.Exit(code)
}

// fixture is one App with two stacks, synthesized once with cdk.json's
// context (so validateAgainstDefaultRules is on, as for `make synth`):
//   - def: the defaults, the repository's deploy/models.json
//   - full: tool servers, a named model, a catalog with a Bedrock ARN and
//     an OpenAI model, callback principals, retained data, custom batch
//     size and concurrency, a reserved receiver concurrency, an alarm
//     topic, tree budgets, the shared token bucket and OTEL_* settings.
//   - public: public callbacks (the default receiver reservation), and
//     agents too large for the environment (bigAgents: an asset file).
type fixture struct {
	once              sync.Once
	dir               string
	err               error
	synthErr          any
	def, full, public *Stack
	publicT           assertions.Template
	defT              assertions.Template
	fullT             assertions.Template
	defJSON           map[string]any
	fullJSON          map[string]any
	publicJSON        map[string]any
}

var fx fixture

const fullCatalog = `{
  "default": "sonnet",
  "models": [
    {"name": "sonnet", "provider": "bedrock", "model_id": "us.anthropic.claude-sonnet-4-20250514-v1:0",
     "context_window": 200000, "max_output_tokens": 8192},
    {"name": "custom", "provider": "bedrock",
     "model_id": "arn:aws:bedrock:eu-west-1:123456789012:provisioned-model/abc",
     "context_window": 100000, "max_output_tokens": 4096},
    {"name": "local", "provider": "openai", "model_id": "qwen3", "context_window": 32768,
     "max_output_tokens": 4096, "openai": {"base_url": "https://llm.example.com/v1"}}
  ]
}`

var fullTools = []string{"https://tools.example.com/rap", "https://ci.example.org"}

// fullAgents is an agents document as cmd/cdkapp passes it (indented here;
// the function gets it compacted).
const fullAgents = `{"agents": [{"name": "reviewer", "instructions": "Review <code>.", "model": "custom"}], "default_agent": "reviewer"}`

// bigAgents do not fit the slice function's 4 KB of environment.
var bigAgents = `{"agents": [{"name": "long", "instructions": "` + strings.Repeat("Be thorough. ", 400) + `"}]}`

const fullAlarmTopic = "arn:aws:sns:us-east-1:123456789012:agentslice-ops"

// fullCallbackBase is a front of the receiver (CloudFront with WAF).
const fullCallbackBase = "https://d111111abcdef8.cloudfront.net/"

func setup(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		const how = "the CDK runs on Node.js (jsii): install Node 20 or later (scripts/npm-deps.sh does)"
		if os.Getenv(testenv.RequireVar) == "1" {
			t.Fatalf("node is not on PATH and %s=1: %s", testenv.RequireVar, how)
		}
		t.Skipf("node is not on PATH: %s", how)
	}
	fx.once.Do(func() { fx.err = fx.build() })
	if fx.err != nil {
		t.Fatalf("building the test stacks: %v", fx.err)
	}
	return &fx
}

func (f *fixture) build() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("jsii: %v", r)
		}
	}()
	if f.dir, err = os.MkdirTemp("", "stacktest"); err != nil {
		return err
	}
	bin := filepath.Join(f.dir, "bin")
	if err := fakeBinDir(bin); err != nil {
		return err
	}
	ctx, err := cdkContext("../../cdk.json")
	if err != nil {
		return err
	}
	catalog, err := os.ReadFile("../../deploy/models.json")
	if err != nil {
		return err
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(filepath.Join(f.dir, "cdk.out"))})
	f.def, err = New(app, "Default", StackProps{ModelCatalog: string(catalog), BinDir: bin})
	if err != nil {
		return err
	}
	f.full, err = New(app, "Full", StackProps{
		ToolServers: fullTools, ModelCatalog: fullCatalog, ModelName: "custom", BinDir: bin, Agents: fullAgents,
		SliceBatchSize: 5, MaxConcurrency: 7, BackgroundMaxConcurrency: 3, RetainData: true,
		CallbackPrincipals:  []string{"arn:aws:iam::210987654321:role/tool-server"},
		ReceiverConcurrency: 5, AlarmTopicARN: fullAlarmTopic, CallbackBaseURL: fullCallbackBase,
		TreeBudgets: true, SharedTPM: true, Telemetry: fullTelemetry,
	})
	if err != nil {
		return err
	}
	f.public, err = New(app, "Public", StackProps{ModelCatalog: string(catalog), BinDir: bin, PublicCallbacks: true, Agents: bigAgents})
	if err != nil {
		return err
	}
	// Synthesize the whole App as the CLI does: this runs the default
	// validation rules, and with validateAgainstDefaultRules any finding
	// (warnings included) panics here.
	func() {
		defer func() { f.synthErr = recover() }()
		app.Synth(nil)
	}()
	f.defT = assertions.Template_FromStack(f.def.Stack, nil)
	f.publicT = assertions.Template_FromStack(f.public.Stack, nil)
	f.fullT = assertions.Template_FromStack(f.full.Stack, nil)
	f.defJSON = *f.defT.ToJSON()
	f.fullJSON = *f.fullT.ToJSON()
	f.publicJSON = *f.publicT.ToJSON()
	return nil
}

// cdkContext reads cdk.json's "context".
func cdkContext(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Context["@aws-cdk/core:validateAgainstDefaultRules"] != true {
		return nil, fmt.Errorf("%s: @aws-cdk/core:validateAgainstDefaultRules is not true", path)
	}
	return c.Context, nil
}

// must runs a CDK assertion, reporting its panic as a test error.
func must(t *testing.T, what string, assertion func()) {
	t.Helper()
	defer func() {
		t.Helper()
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	assertion()
}

type obj = map[string]any

func arr(v ...any) *[]any { return &v }

func like(m obj) assertions.Matcher { return assertions.Match_ObjectLike(&m) }

func TestSynthPassesDefaultRules(t *testing.T) {
	f := setup(t)
	if f.synthErr != nil {
		t.Fatalf("synth with validateAgainstDefaultRules failed: %v", f.synthErr)
	}
	for _, s := range []*Stack{f.def, f.full, f.public} {
		a := assertions.Annotations_FromStack(s.Stack)
		must(t, "no warnings", func() { a.HasNoWarning(jsii.String("*"), assertions.Match_AnyValue()) })
		must(t, "no errors", func() { a.HasNoError(jsii.String("*"), assertions.Match_AnyValue()) })
	}
}

// TestDefaultRulesAreLive checks that the validation the previous test
// relies on does reject a template: a queue whose visibility timeout is
// shorter than the timeout of the function it triggers.
func TestDefaultRulesAreLive(t *testing.T) {
	f := setup(t)
	ctx, err := cdkContext("../../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(filepath.Join(f.dir, "bad.out"))})
	st := awscdk.NewStack(app, jsii.String("Bad"), nil)
	q := awssqs.NewQueue(st, jsii.String("Q"), &awssqs.QueueProps{VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(30))})
	fn := awslambda.NewFunction(st, jsii.String("F"), &awslambda.FunctionProps{
		Runtime: awslambda.Runtime_PROVIDED_AL2023(), Handler: jsii.String("bootstrap"),
		Code:    awslambda.Code_FromAsset(jsii.String(filepath.Join(f.dir, "bin", FnDelayRelay)), nil),
		Timeout: awscdk.Duration_Seconds(jsii.Number(60)),
	})
	awslambda.NewEventSourceMapping(st, jsii.String("M"), &awslambda.EventSourceMappingProps{
		Target: fn, EventSourceArn: q.QueueArn(),
	})
	var got any
	func() {
		defer func() { got = recover() }()
		app.Synth(nil)
	}()
	if got == nil {
		t.Fatal("synth of a queue with visibility 30 s < function timeout 60 s succeeded, want a validation failure")
	}
	report, err := os.ReadFile(filepath.Join(f.dir, "bad.out", "validation-report.json"))
	if err != nil || !strings.Contains(string(report), "E3505") {
		t.Fatalf("synth failed with %v; want the report to name rule E3505 (visibility timeout), got %s (%v)", got, report, err)
	}
}

func TestResourceCounts(t *testing.T) {
	f := setup(t)
	for typ, n := range map[string]float64{
		"AWS::SQS::Queue":                 8, // interactive and background input queues
		"AWS::Lambda::Function":           3,
		"AWS::Lambda::EventSourceMapping": 4, // one per input queue + the delay relay's two
		"AWS::Lambda::Url":                1,
		"AWS::DynamoDB::GlobalTable":      1,
		"AWS::DSQL::Cluster":              1,
		"AWS::SecretsManager::Secret":     1,
		"AWS::Scheduler::ScheduleGroup":   1,
		"AWS::Logs::LogGroup":             3,
		"AWS::IAM::Role":                  4, // three functions + the scheduler
		"AWS::IAM::ManagedPolicy":         1, // for callers of the receiver URL
		"AWS::CloudWatch::Alarm":          6, // four DLQs, slice errors and throttles
		"AWS::SNS::Topic":                 0, // an alarm topic is the operator's (AlarmTopicARN)
	} {
		must(t, typ, func() { f.defT.ResourceCountIs(jsii.String(typ), jsii.Number(n)) })
	}
	// No managed policies anywhere (AWSLambdaBasicExecutionRole may create
	// log groups in any account region).
	for id, r := range resources(f.defJSON, "AWS::IAM::Role") {
		if mp, ok := props(r)["ManagedPolicyArns"]; ok {
			t.Errorf("role %s has managed policies %v", id, mp)
		}
	}
}

func TestQueues(t *testing.T) {
	f := setup(t)
	q := f.def.Queues
	dlq := func(queue awssqs.Queue) obj {
		return obj{"deadLetterTargetArn": f.def.Resolve(queue.QueueArn()), "maxReceiveCount": MaxReceiveCount}
	}
	common := obj{"MaximumMessageSize": MaxMessageBytes, "MessageRetentionPeriod": 1209600, "SqsManagedSseEnabled": true}
	with := func(extra obj) obj {
		m := obj{}
		for k, v := range common {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	fifo := obj{"FifoQueue": true, "ContentBasedDeduplication": false,
		"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}
	cases := []struct {
		name  string
		queue awssqs.Queue
		want  obj
	}{
		{"input", q.Input, with(obj{"VisibilityTimeout": f.def.Budget.Visibility().Seconds(), "RedrivePolicy": dlq(q.InputDLQ)})},
		{"background input", q.InputBackground, with(obj{"VisibilityTimeout": f.def.Budget.Visibility().Seconds(), "RedrivePolicy": dlq(q.InputDLQ)})},
		{"input DLQ", q.InputDLQ, with(nil)},
		{"delay", q.Delay, with(obj{"VisibilityTimeout": 6 * RelayTimeout.Seconds(), "RedrivePolicy": dlq(q.DelayDLQ)})},
		{"delay DLQ", q.DelayDLQ, with(nil)},
		{"wake-up DLQ", q.WakeupDLQ, with(obj{"VisibilityTimeout": 6 * RelayTimeout.Seconds(), "RedrivePolicy": dlq(q.DelayDLQ)})},
		{"output", q.Output, with(obj{"VisibilityTimeout": 30, "RedrivePolicy": dlq(q.OutputDLQ)})},
		{"output DLQ", q.OutputDLQ, with(nil)},
	}
	for _, c := range cases {
		props := propsOf(t, f.defJSON, f.def.Resolve(c.queue.QueueArn()))
		for k, want := range c.want {
			if !sameJSON(props[k], want) {
				t.Errorf("%s: %s = %s, want %s", c.name, k, js(props[k]), js(want))
			}
		}
		isFIFO := c.queue == q.Input || c.queue == q.InputDLQ || c.queue == q.InputBackground
		for k, want := range fifo {
			if got, ok := props[k]; isFIFO && !sameJSON(got, want) {
				t.Errorf("%s: %s = %s, want %s", c.name, k, js(got), js(want))
			} else if !isFIFO && ok {
				t.Errorf("%s: standard queue has %s", c.name, k)
			}
		}
	}
	// Every queue refuses plain-HTTP access.
	must(t, "TLS only", func() {
		f.defT.ResourcePropertiesCountIs(jsii.String("AWS::SQS::QueuePolicy"), like(obj{
			"PolicyDocument": like(obj{"Statement": assertions.Match_ArrayWith(arr(like(obj{
				"Effect": "Deny", "Condition": obj{"Bool": obj{"aws:SecureTransport": "false"}},
			})))}),
		}), jsii.Number(8))
	})
}

func TestStores(t *testing.T) {
	f := setup(t)
	must(t, "dedup table", func() {
		f.defT.HasResourceProperties(jsii.String("AWS::DynamoDB::GlobalTable"), obj{
			"KeySchema":               []any{obj{"AttributeName": "pk", "KeyType": "HASH"}},
			"AttributeDefinitions":    []any{obj{"AttributeName": "pk", "AttributeType": "S"}},
			"BillingMode":             "PAY_PER_REQUEST",
			"TimeToLiveSpecification": obj{"AttributeName": "expires_at", "Enabled": true},
			"Replicas": assertions.Match_ArrayWith(arr(like(obj{
				"PointInTimeRecoverySpecification": obj{"PointInTimeRecoveryEnabled": true},
			}))),
		})
	})
	must(t, "DSQL cluster", func() {
		f.defT.HasResource(jsii.String("AWS::DSQL::Cluster"), obj{
			"Properties":     like(obj{"DeletionProtectionEnabled": false}),
			"DeletionPolicy": "Delete",
		})
	})
	// RetainData keeps both and protects them.
	must(t, "retained table", func() {
		f.fullT.HasResource(jsii.String("AWS::DynamoDB::GlobalTable"), obj{
			"Properties":     like(obj{"Replicas": assertions.Match_ArrayWith(arr(like(obj{"DeletionProtectionEnabled": true})))}),
			"DeletionPolicy": "Retain",
		})
	})
	for _, typ := range []string{"AWS::SQS::Queue", "AWS::Logs::LogGroup", "AWS::SecretsManager::Secret", "AWS::Scheduler::ScheduleGroup"} {
		must(t, typ+" deleted even with RetainData", func() {
			f.fullT.AllResources(jsii.String(typ), obj{"DeletionPolicy": "Delete"})
		})
	}
	must(t, "retained cluster", func() {
		f.fullT.HasResource(jsii.String("AWS::DSQL::Cluster"), obj{
			"Properties":     like(obj{"DeletionProtectionEnabled": true}),
			"DeletionPolicy": "Retain",
		})
	})
}

func TestKeyringSecret(t *testing.T) {
	f := setup(t)
	secrets := resources(f.defJSON, "AWS::SecretsManager::Secret")
	if len(secrets) != 1 {
		t.Fatalf("%d secrets, want 1", len(secrets))
	}
	for _, r := range secrets {
		gen, _ := props(r)["GenerateSecretString"].(obj)
		want := obj{"SecretStringTemplate": `{"id":"k1"}`, "GenerateStringKey": "secret",
			"PasswordLength": float64(KeyringSecretLength), "ExcludePunctuation": true, "IncludeSpace": false}
		for k, v := range want {
			if !sameJSON(gen[k], v) {
				t.Errorf("GenerateSecretString.%s = %s, want %s", k, js(gen[k]), js(v))
			}
		}
		if _, ok := props(r)["SecretString"]; ok {
			t.Error("the template holds a secret value")
		}
		// What Secrets Manager makes of that generator must be a keyring the
		// functions accept: the template with the key added, the value of
		// PasswordLength letters and digits.
		var value obj
		if err := json.Unmarshal([]byte(gen["SecretStringTemplate"].(string)), &value); err != nil {
			t.Fatal(err)
		}
		value[gen["GenerateStringKey"].(string)] = strings.Repeat("aZ09", KeyringSecretLength/4)
		b, _ := json.Marshal(value)
		kr, err := rap.ParseKeyringSecret(string(b))
		if err != nil {
			t.Fatalf("rap.ParseKeyringSecret(generated shape): %v", err)
		}
		if kr.CurrentID() != KeyringKeyID {
			t.Errorf("key ID %q, want %q", kr.CurrentID(), KeyringKeyID)
		}
	}
}

func TestFunctions(t *testing.T) {
	f := setup(t)
	// RecursiveLoop: the slice function and the relay send to queues that
	// trigger them; with Lambda's default (Terminate) a thread's 17th
	// internal hop in a row would be dropped. The receiver keeps it.
	for _, fn := range []struct {
		f       awslambda.Function
		timeout float64
		memory  float64
		loop    string
	}{
		{f.def.Slice, f.def.Budget.Timeout.Seconds(), 512, "Allow"},
		{f.def.Receiver, ReceiverTimeout.Seconds(), 256, "Terminate"},
		{f.def.Relay, RelayTimeout.Seconds(), 128, "Allow"},
	} {
		p := propsOf(t, f.defJSON, f.def.Resolve(fn.f.FunctionArn()))
		want := obj{"Runtime": "provided.al2023", "Architectures": []any{"arm64"}, "Handler": "bootstrap",
			"Timeout": fn.timeout, "MemorySize": fn.memory, "RecursiveLoop": fn.loop}
		for k, v := range want {
			if !sameJSON(p[k], v) {
				t.Errorf("%s: %s = %s, want %s", *fn.f.Node().Id(), k, js(p[k]), js(v))
			}
		}
		lc, _ := p["LoggingConfig"].(obj)
		if !sameJSON(lc["LogGroup"], f.def.Resolve(fn.f.LogGroup().LogGroupName())) {
			t.Errorf("%s: LoggingConfig = %s, want its own log group", *fn.f.Node().Id(), js(p["LoggingConfig"]))
		}
	}
	must(t, "log retention", func() {
		f.defT.AllResourcesProperties(jsii.String("AWS::Logs::LogGroup"), obj{"RetentionInDays": 30})
	})
	// Three functions, three different assets: each its own bootstrap.
	keys := map[string]bool{}
	for _, r := range resources(f.defJSON, "AWS::Lambda::Function") {
		code, _ := props(r)["Code"].(obj)
		keys[js(code["S3Key"])] = true
	}
	if len(keys) != 3 {
		t.Errorf("the functions share assets: %d distinct S3 keys, want 3", len(keys))
	}
}

func TestEventSources(t *testing.T) {
	f := setup(t)
	for _, c := range []struct {
		name string
		s    *Stack
		tmpl assertions.Template
		fn   awslambda.Function
		q    awssqs.Queue
		want obj
	}{
		{"slice default", f.def, f.defT, f.def.Slice, f.def.Queues.Input,
			obj{"BatchSize": DefaultSliceBatchSize, "ScalingConfig": obj{"MaximumConcurrency": DefaultMaxConcurrency}}},
		{"slice custom", f.full, f.fullT, f.full.Slice, f.full.Queues.Input,
			obj{"BatchSize": 5, "ScalingConfig": obj{"MaximumConcurrency": 7}}},
		{"slice background default", f.def, f.defT, f.def.Slice, f.def.Queues.InputBackground,
			obj{"BatchSize": DefaultSliceBatchSize, "ScalingConfig": obj{"MaximumConcurrency": DefaultBackgroundMaxConcurrency}}},
		{"slice background custom", f.full, f.fullT, f.full.Slice, f.full.Queues.InputBackground,
			obj{"BatchSize": 5, "ScalingConfig": obj{"MaximumConcurrency": 3}}},
		{"relay", f.def, f.defT, f.def.Relay, f.def.Queues.Delay,
			obj{"BatchSize": 10, "ScalingConfig": assertions.Match_Absent()}},
		{"relay of dead-lettered wake-ups", f.def, f.defT, f.def.Relay, f.def.Queues.WakeupDLQ,
			obj{"BatchSize": 10, "ScalingConfig": assertions.Match_Absent()}},
	} {
		want := obj{
			"FunctionName":                   c.s.Resolve(c.fn.FunctionName()),
			"EventSourceArn":                 c.s.Resolve(c.q.QueueArn()),
			"FunctionResponseTypes":          []any{"ReportBatchItemFailures"},
			"MaximumBatchingWindowInSeconds": assertions.Match_Absent(), // not allowed on FIFO; no wait on delay
		}
		for k, v := range c.want {
			want[k] = v
		}
		must(t, c.name, func() { c.tmpl.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), want) })
	}
}

func TestReceiverURL(t *testing.T) {
	f := setup(t)
	must(t, "IAM auth", func() {
		f.defT.HasResourceProperties(jsii.String("AWS::Lambda::Url"), obj{
			"AuthType":          "AWS_IAM",
			"TargetFunctionArn": f.def.Resolve(f.def.Receiver.FunctionArn()),
			"Cors":              assertions.Match_Absent(),
		})
	})
	must(t, "public callbacks", func() {
		f.publicT.HasResourceProperties(jsii.String("AWS::Lambda::Url"), obj{
			"AuthType":          "NONE",
			"TargetFunctionArn": f.public.Resolve(f.public.Receiver.FunctionArn()),
		})
	})
	// Reserved concurrency: by default only for a public URL, where every
	// forged callback is an invocation; a configured value in either mode.
	for _, c := range []struct {
		name string
		s    *Stack
		tj   map[string]any
		want any
	}{
		{"IAM auth default", f.def, f.defJSON, nil},
		{"public default", f.public, f.publicJSON, float64(DefaultReceiverConcurrency)},
		{"configured", f.full, f.fullJSON, float64(5)},
	} {
		p := propsOf(t, c.tj, c.s.Resolve(c.s.Receiver.FunctionArn()))
		if got := p["ReservedConcurrentExecutions"]; !sameJSON(got, c.want) {
			t.Errorf("%s: receiver ReservedConcurrentExecutions = %s, want %s", c.name, js(got), js(c.want))
		}
		for _, fn := range []awslambda.Function{c.s.Slice, c.s.Relay} {
			if got, ok := propsOf(t, c.tj, c.s.Resolve(fn.FunctionArn()))["ReservedConcurrentExecutions"]; ok {
				t.Errorf("%s: %s reserves %s", c.name, *fn.Node().Id(), js(got))
			}
		}
	}
	// No resource policy opens the URL, unless principals are named.
	if n := len(resources(f.defJSON, "AWS::Lambda::Permission")); n != 0 {
		t.Errorf("default stack has %d Lambda permissions, want 0", n)
	}
	for _, action := range []string{"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"} {
		must(t, "callback principal "+action, func() {
			f.fullT.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), obj{
				"Action":       action,
				"Principal":    "arn:aws:iam::210987654321:role/tool-server",
				"FunctionName": f.full.Resolve(f.full.Receiver.FunctionArn()),
			})
		})
	}
}

func TestEnvironment(t *testing.T) {
	f := setup(t)
	s := f.def
	q := s.Queues
	callback := obj{"Fn::Join": []any{"", []any{s.Resolve(s.ReceiverURL.Url()), CallbackPath}}}
	catalog, _ := os.ReadFile("../../deploy/models.json")
	var compact strings.Builder
	{
		var v any
		if err := json.Unmarshal(catalog, &v); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		compact.Write(b)
	}
	wantSlice := obj{
		EnvInputQueueURL:      s.Resolve(q.Input.QueueUrl()),
		EnvBackgroundQueueURL: s.Resolve(q.InputBackground.QueueUrl()),
		EnvDLQURL:             s.Resolve(q.InputDLQ.QueueUrl()),
		EnvOutputQueueURL:     s.Resolve(q.Output.QueueUrl()),
		EnvDelayQueueURL:      s.Resolve(q.Delay.QueueUrl()),
		EnvDedupTable:         s.Resolve(s.Table.TableName()),
		EnvDSQLEndpoint:       s.Resolve(s.Cluster.AttrEndpoint()),
		EnvDSQLUser:           DSQLAppRole,
		EnvSchedulerRoleARN:   s.Resolve(s.Scheduler.Role.RoleArn()),
		EnvScheduleGroup:      s.Resolve(s.Scheduler.Group.ScheduleGroupName()),
		EnvScheduleDLQARN:     s.Resolve(q.WakeupDLQ.QueueArn()),
		EnvModelCatalog:       "(compact JSON)",
		EnvModel:              "",
		EnvAgents:             "",
		EnvToolServers:        "",
		EnvCallbackURL:        callback,
		EnvCallbackKeysSecret: s.Resolve(s.Keyring.SecretArn()),
	}
	checkEnv(t, "slicefn", envOf(t, f.defJSON, s.Resolve(s.Slice.FunctionArn())), wantSlice, func(got any) {
		var a, b any
		if err := json.Unmarshal([]byte(fmt.Sprint(got)), &a); err != nil {
			t.Errorf("catalog is not JSON: %v", err)
		}
		_ = json.Unmarshal(catalog, &b)
		if !sameJSON(a, b) || strings.ContainsAny(fmt.Sprint(got), "\n ") {
			t.Errorf("catalog = %v, want deploy/models.json compacted", got)
		}
	})
	checkEnv(t, "rapreceiver", envOf(t, f.defJSON, s.Resolve(s.Receiver.FunctionArn())), obj{
		EnvInputQueueURL:      s.Resolve(q.Input.QueueUrl()),
		EnvBackgroundQueueURL: s.Resolve(q.InputBackground.QueueUrl()),
		EnvCallbackKeysSecret: s.Resolve(s.Keyring.SecretArn()),
		EnvDSQLEndpoint:       s.Resolve(s.Cluster.AttrEndpoint()),
		EnvDSQLUser:           DSQLReaderRole,
		EnvDedupTable:         s.Resolve(s.Table.TableName()),
		EnvOutputQueueURL:     s.Resolve(q.Output.QueueUrl()),
	}, nil)
	checkEnv(t, "delayrelay", envOf(t, f.defJSON, s.Resolve(s.Relay.FunctionArn())), obj{
		EnvInputQueueURL:      s.Resolve(q.Input.QueueUrl()),
		EnvBackgroundQueueURL: s.Resolve(q.InputBackground.QueueUrl()),
	}, nil)

	full := envOf(t, f.fullJSON, f.full.Resolve(f.full.Slice.FunctionArn()))
	if got := full[EnvToolServers]; got != strings.Join(fullTools, ",") {
		t.Errorf("full: %s = %v, want %q", EnvToolServers, got, strings.Join(fullTools, ","))
	}
	if got, want := full[EnvCallbackURL], fullCallbackBase+CallbackPath; got != want {
		t.Errorf("full: %s = %s, want %s (CallbackBaseURL)", EnvCallbackURL, js(got), want)
	}
	if got := full[EnvModel]; got != "custom" {
		t.Errorf("full: %s = %v, want custom", EnvModel, got)
	}
	if got, want := full[EnvAgents], `{"agents":[{"name":"reviewer","instructions":"Review <code>.","model":"custom"}],"default_agent":"reviewer"}`; got != want {
		t.Errorf("full: %s = %v, want %s", EnvAgents, got, want)
	}
}

func checkEnv(t *testing.T, fn string, got, want obj, catalog func(any)) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: %s missing", fn, k)
		case k == EnvModelCatalog && catalog != nil:
			catalog(g)
		case !sameJSON(g, v):
			t.Errorf("%s: %s = %s, want %s", fn, k, js(g), js(v))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected variable %s", fn, k)
		}
	}
}

// TestLeastPrivilege compares each role's whole policy, statement by
// statement, with what its function uses: a grant added anywhere without
// updating this list fails.
func TestLeastPrivilege(t *testing.T) {
	f := setup(t)
	for _, c := range []struct {
		name    string
		s       *Stack
		tj      map[string]any
		ledger  grant // TreeBudgets, SharedTPM
		bedrock []string
	}{
		{"default", f.def, f.defJSON, grant{}, []string{
			"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0",
			"arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0",
			"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/us.amazon.nova-lite-v1:0",
			"arn:${AWS::Partition}:bedrock:*::foundation-model/amazon.nova-lite-v1:0",
		}},
		{"full", f.full, f.fullJSON, grant{ledgerActions, f.full.Resolve(f.full.Table.TableArn())}, []string{
			"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0",
			"arn:${AWS::Partition}:bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0",
			"arn:aws:bedrock:eu-west-1:123456789012:provisioned-model/abc",
		}},
	} {
		s, q := c.s, c.s.Queues
		r := s.Resolve
		consume := []string{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}
		send := []string{"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
		logs := func(fn awslambda.Function) grant {
			return grant{[]string{"logs:CreateLogStream", "logs:PutLogEvents"}, r(fn.LogGroup().LogGroupArn())}
		}
		secret := grant{[]string{"secretsmanager:GetSecretValue"}, r(s.Keyring.SecretArn())}
		var bedrock []any
		for _, arn := range c.bedrock {
			if strings.Contains(arn, "${") {
				bedrock = append(bedrock, obj{"Fn::Sub": arn})
			} else {
				bedrock = append(bedrock, arn)
			}
		}
		want := map[string][]grant{
			"slicefn": {
				logs(s.Slice),
				{consume, r(q.Input.QueueArn())},
				{consume, r(q.InputBackground.QueueArn())},
				{send, r(q.Input.QueueArn())},
				{send, r(q.InputBackground.QueueArn())},
				{send, r(q.InputDLQ.QueueArn())},
				{send, r(q.Output.QueueArn())},
				{send, r(q.Delay.QueueArn())},
				{[]string{"dynamodb:BatchGetItem", "dynamodb:PutItem"}, r(s.Table.TableArn())},
				c.ledger,
				secret,
				{[]string{"dsql:DbConnect"}, r(s.Cluster.AttrResourceArn())},
				{[]string{"scheduler:CreateSchedule", "scheduler:DeleteSchedule"}, r(s.Scheduler.scheduleARNs(s.Stack))},
				{[]string{"iam:PassRole"}, r(s.Scheduler.Role.RoleArn())},
				{[]string{"bedrock:InvokeModelWithResponseStream"}, bedrock},
			},
			"rapreceiver": {logs(s.Receiver), {send, r(q.Input.QueueArn())}, {send, r(q.InputBackground.QueueArn())}, secret,
				{[]string{"dsql:DbConnect"}, r(s.Cluster.AttrResourceArn())}, {send, r(q.Output.QueueArn())},
				{liveViewActions, r(s.Table.TableArn())}},
			"delayrelay": {logs(s.Relay), {consume, r(q.Delay.QueueArn())}, {consume, r(q.WakeupDLQ.QueueArn())}, {send, r(q.Input.QueueArn())},
				{send, r(q.InputBackground.QueueArn())}},
			"scheduler": {{[]string{"sqs:SendMessage"}, []any{r(q.Input.QueueArn()), r(q.WakeupDLQ.QueueArn())}},
				{[]string{"sqs:SendMessage"}, r(q.InputBackground.QueueArn())}},
		}
		roles := map[string]any{
			"slicefn":     r(s.Slice.Role().RoleArn()),
			"rapreceiver": r(s.Receiver.Role().RoleArn()),
			"delayrelay":  r(s.Relay.Role().RoleArn()),
			"scheduler":   r(s.Scheduler.Role.RoleArn()),
		}
		for name, roleArn := range roles {
			got := roleGrants(t, c.tj, roleArn)
			if g, w := grantSet(got), grantSet(want[name]); !sameJSON(g, w) {
				t.Errorf("%s %s policy:\n got  %s\n want %s", c.name, name, strings.Join(g, "\n      "), strings.Join(w, "\n      "))
			}
		}
	}
	// Conditions: PassRole only to Scheduler; the scheduler role only for
	// this account's schedule group.
	must(t, "PassRole condition", func() {
		f.defT.HasResourceProperties(jsii.String("AWS::IAM::Policy"), like(obj{
			"PolicyDocument": like(obj{"Statement": assertions.Match_ArrayWith(arr(obj{
				"Action": "iam:PassRole", "Effect": "Allow",
				"Resource":  f.def.Resolve(f.def.Scheduler.Role.RoleArn()),
				"Condition": obj{"StringEquals": obj{"iam:PassedToService": "scheduler.amazonaws.com"}},
			}))}),
		}))
	})
	must(t, "scheduler trust", func() {
		f.defT.HasResourceProperties(jsii.String("AWS::IAM::Role"), like(obj{
			"AssumeRolePolicyDocument": obj{"Version": "2012-10-17", "Statement": []any{obj{
				"Action": "sts:AssumeRole", "Effect": "Allow",
				"Principal": obj{"Service": "scheduler.amazonaws.com"},
				"Condition": obj{"StringEquals": obj{
					"aws:SourceAccount": obj{"Ref": "AWS::AccountId"},
					"aws:SourceArn":     f.def.Resolve(f.def.Scheduler.Group.ScheduleGroupArn()),
				}},
			}}},
		}))
	})
}

func TestOutputs(t *testing.T) {
	f := setup(t)
	s := f.def
	for name, value := range map[string]*string{
		OutInputQueueURL:   s.Queues.Input.QueueUrl(),
		OutBackgroundURL:   s.Queues.InputBackground.QueueUrl(),
		OutInputDLQURL:     s.Queues.InputDLQ.QueueUrl(),
		OutOutputQueueURL:  s.Queues.Output.QueueUrl(),
		OutDelayQueueURL:   s.Queues.Delay.QueueUrl(),
		OutReceiverURL:     s.ReceiverURL.Url(),
		OutReceiverFnARN:   s.Receiver.FunctionArn(),
		OutDSQLEndpoint:    s.Cluster.AttrEndpoint(),
		OutDedupTable:      s.Table.TableName(),
		OutScheduleGroup:   s.Scheduler.Group.ScheduleGroupName(),
		OutKeyringSecretID: s.Keyring.SecretArn(),
		OutCallbackPolicy:  s.CallbackInvokePolicy.ManagedPolicyArn(),
		OutSliceRoleARN:    s.Slice.Role().RoleArn(),
		OutReceiverRoleARN: s.Receiver.Role().RoleArn(),
		OutSchedulerRole:   s.Scheduler.Role.RoleArn(),
		OutWakeupDLQARN:    s.Queues.WakeupDLQ.QueueArn(),
	} {
		must(t, "output "+name, func() {
			f.defT.HasOutput(jsii.String(name), obj{"Value": s.Resolve(value)})
		})
	}
	if outs := *f.defT.FindOutputs(jsii.String("*"), obj{}); len(outs) != 16 {
		t.Errorf("%d outputs, want 16", len(outs))
	}
}
