package lambdatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/jackc/pgx/v5"
	"github.com/sivchari/kumo"

	"github.com/agentslice/agentslice/internal/dedup"
	"github.com/agentslice/agentslice/internal/dsql"
	"github.com/agentslice/agentslice/internal/testenv"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

// The variables the service scripts print (scripts/services/*.sh env).
const (
	SQSEndpointVar = "AGENTSLICE_TEST_SQS_ENDPOINT"
	DDBEndpointVar = "AGENTSLICE_TEST_DYNAMODB_ENDPOINT"
	PGDSNVar       = "AGENTSLICE_TEST_PG_DSN"
)

// MaxReceiveCount is the input queue's redrive setting in a Stack.
const MaxReceiveCount = 3

// Stack is a local deployment of what the CDK stack provisions: the FIFO
// input queue and its FIFO dead-letter queue, the output queue, the delay
// queue and its dead-letter queue (fauxqs), the dedup table (DynamoDB
// Local), a migrated history schema (PostgreSQL), and an in-process kumo
// server standing in for EventBridge Scheduler and Secrets Manager, which
// holds the callback keyring secret. Everything is named uniquely and
// removed when the test ends.
type Stack struct {
	SQS *sqs.Client
	DDB *dynamodb.Client

	SQSEndpoint, DDBEndpoint string
	Kumo                     *kumo.Server

	Input, DLQ, Output, Delay, DelayDLQ string // queue URLs
	Table                               string
	Schema                              string
	PGDSN                               string // search_path set to Schema
	Keys                                string // the callback keyring, "id:base64"
	KeysSecretARN                       string

	name string // the prefix of every resource's name
}

// NewStack creates a Stack, or skips the test (fails under
// AGENTSLICE_REQUIRE_SERVICES=1) when a service is not running.
func NewStack(t testing.TB) *Stack {
	t.Helper()
	s := &Stack{
		SQSEndpoint: testenv.Need(t, SQSEndpointVar),
		DDBEndpoint: testenv.Need(t, DDBEndpointVar),
	}
	dsn := testenv.Need(t, PGDSNVar)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := awstest.Config()
	s.SQS = sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(s.SQSEndpoint) })
	s.DDB = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(s.DDBEndpoint) })
	suffix := randHex(4)
	name := awstest.Name(t, "")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	name = strings.Trim(name, "-_") + "-" + suffix

	s.name = name
	s.Input = s.queue(t, ctx, name+"-in", true)
	s.DLQ = s.queue(t, ctx, name+"-dlq", true)
	s.Output = s.queue(t, ctx, name+"-out", false)
	s.Delay = s.queue(t, ctx, name+"-delay", false)
	s.DelayDLQ = s.queue(t, ctx, name+"-delay-dlq", false)

	s.Table = name + "-dedup"
	if err := dedup.CreateTable(ctx, s.DDB, s.Table); err != nil {
		t.Fatalf("creating the dedup table: %v", err)
	}
	t.Cleanup(func() {
		_, _ = s.DDB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(s.Table)})
	})

	s.Schema = "sl_" + suffix + randHex(3)
	s.PGDSN = withSearchPath(dsn, s.Schema)
	s.migrate(t, ctx, dsn)

	s.Kumo = kumo.NewServer()
	t.Cleanup(s.Kumo.Close)
	s.Keys = "k1:" + base64.StdEncoding.EncodeToString(randBytes(32))
	sm := secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(s.Kumo.URL) })
	out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name + "-keys"), SecretString: aws.String(s.Keys)})
	if err != nil {
		t.Fatalf("creating the keyring secret on kumo: %v", err)
	}
	s.KeysSecretARN = aws.ToString(out.ARN)
	return s
}

// AddQueue creates one more queue of the stack (removed when the test
// ends), named after the stack with suffix, and returns its URL: a FIFO
// queue when fifo is true (".fifo" is appended).
func (s *Stack) AddQueue(t testing.TB, suffix string, fifo bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return s.queue(t, ctx, s.name+suffix, fifo)
}

func (s *Stack) queue(t testing.TB, ctx context.Context, name string, fifo bool) string {
	t.Helper()
	attrs := map[string]string{"VisibilityTimeout": "60"}
	if fifo {
		name += ".fifo"
		attrs["FifoQueue"] = "true"
	}
	out, err := s.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("creating queue %s: %v", name, err)
	}
	u := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = s.SQS.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
	return u
}

func (s *Stack) migrate(t testing.TB, ctx context.Context, dsn string) {
	t.Helper()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to %s: %v", PGDSNVar, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+s.Schema); err != nil {
		t.Fatalf("creating schema %s: %v", s.Schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+s.Schema+" CASCADE"); err != nil {
			t.Errorf("cleanup: dropping schema %s: %v", s.Schema, err)
		}
	})
	pool, err := dsql.NewPool(ctx, dsql.Config{Dialect: dsql.Postgres, DSN: s.PGDSN})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := dsql.Migrate(ctx, pool, dsql.Postgres); err != nil {
		t.Fatalf("migrating schema %s: %v", s.Schema, err)
	}
}

// AWSEnv returns the AWS part of a function's environment: region, static
// credentials, no shared files, and the SDK's endpoint overrides pointing
// at the local services (AWS_ENDPOINT_URL_<SERVICE>).
func (s *Stack) AWSEnv() []string {
	return []string{
		"AWS_REGION=" + awstest.Region,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_CONFIG_FILE=/dev/null",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_ENDPOINT_URL_SQS=" + s.SQSEndpoint,
		"AWS_ENDPOINT_URL_DYNAMODB=" + s.DDBEndpoint,
		"AWS_ENDPOINT_URL_SCHEDULER=" + s.Kumo.URL,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + s.Kumo.URL,
	}
}

// Env returns the slice function's environment for this stack: AWSEnv and
// the variables the CDK stack would set, without the model, tool-server and
// callback settings.
func (s *Stack) Env() []string {
	return append(s.AWSEnv(),
		"AGENTSLICE_INPUT_QUEUE_URL="+s.Input,
		"AGENTSLICE_DLQ_URL="+s.DLQ,
		"AGENTSLICE_OUTPUT_QUEUE_URL="+s.Output,
		"AGENTSLICE_DELAY_QUEUE_URL="+s.Delay,
		"AGENTSLICE_DEDUP_TABLE="+s.Table,
		"AGENTSLICE_PG_DSN="+s.PGDSN,
		"AGENTSLICE_SCHEDULER_ROLE_ARN=arn:aws:iam::000000000000:role/agentslice-scheduler",
		"AGENTSLICE_SCHEDULE_GROUP=default",
		"AGENTSLICE_CALLBACK_KEYS_SECRET="+s.KeysSecretARN,
	)
}

// withSearchPath adds search_path=schema to a PostgreSQL connection string
// (URL or key=value form).
func withSearchPath(dsn, schema string) string {
	if strings.Contains(dsn, "://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			q.Set("search_path", schema)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	return dsn + " search_path=" + schema
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func randHex(n int) string { return hex.EncodeToString(randBytes(n)) }
