package lambdafn_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/sivchari/kumo"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/testenv/awstest"
)

func TestLoadKeyring(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := kumo.NewServer()
	defer srv.Close()
	sm := secretsmanager.NewFromConfig(awstest.Config(), func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	spec := "k2:" + strings.Repeat("QUJD", 11) + ", k1:" + strings.Repeat("REVG", 11)
	create := func(name string, value *string) string {
		out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: value})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	good := create("keys-good", aws.String(spec))
	bad := create("keys-bad", aws.String("no colon here"))
	// What the CDK stack generates: Secrets Manager can only generate JSON.
	generated := create("keys-generated", aws.String(`{"id":"k7","secret":"`+strings.Repeat("aB3", 22)+`"}`))
	kr, err := lambdafn.LoadKeyring(ctx, lambdafn.KeySource{SecretARN: generated}, sm)
	if err != nil || kr.CurrentID() != "k7" {
		t.Fatalf("the stack's generated secret: %v, %v", kr, err)
	}

	kr, err = lambdafn.LoadKeyring(ctx, lambdafn.KeySource{SecretARN: good}, sm)
	if err != nil || kr.CurrentID() != "k2" {
		t.Fatalf("from the secret: %v, %v", kr, err)
	}
	kr, err = lambdafn.LoadKeyring(ctx, lambdafn.KeySource{Inline: spec}, nil)
	if err != nil || kr.CurrentID() != "k2" {
		t.Fatalf("inline: %v, %v", kr, err)
	}
	var ee *lambdafn.EnvError
	if _, err := lambdafn.LoadKeyring(ctx, lambdafn.KeySource{SecretARN: bad}, sm); !errors.As(err, &ee) || ee.Var != lambdafn.EnvCallbackKeysSecret {
		t.Fatalf("malformed secret: %v", err)
	}
	if _, err := lambdafn.LoadKeyring(ctx, lambdafn.KeySource{Inline: "k1:short"}, nil); !errors.As(err, &ee) || ee.Var != lambdafn.EnvCallbackKeys {
		t.Fatalf("malformed inline keyring: %v", err)
	}
	_, err = lambdafn.LoadKeyring(ctx, lambdafn.KeySource{SecretARN: "arn:aws:secretsmanager:us-east-1:000000000000:secret:missing"}, sm)
	if err == nil || !strings.Contains(err.Error(), lambdafn.EnvCallbackKeysSecret) {
		t.Fatalf("missing secret: %v", err)
	}
}
