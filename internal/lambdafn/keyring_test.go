package lambdafn_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/sivchari/kumo"

	"github.com/agentslice/agentslice/internal/lambdafn"
	"github.com/agentslice/agentslice/internal/rap"
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

// TestKeyringCacheRefreshesAfterTTL: a rotated secret reaches a warm
// function once the TTL has passed (not before), in place, so the Signer
// and Receiver holding the keyring see it; a failed re-read keeps the keys.
// Secrets Manager is kumo's in-process server.
//
// Not parallel: two kumo servers built at once race on kumo's package state.
func TestKeyringCacheRefreshesAfterTTL(t *testing.T) {
	ctx := context.Background()
	srv := kumo.NewServer()
	defer srv.Close()
	sm := secretsmanager.NewFromConfig(awstest.Config(), func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(srv.URL) })
	k1 := "k1:" + strings.Repeat("REVG", 11)
	k2 := "k2:" + strings.Repeat("QUJD", 11)
	out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("keys"), SecretString: aws.String(k1)})
	if err != nil {
		t.Fatal(err)
	}
	put := func(v string) {
		t.Helper()
		if _, err := sm.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: out.ARN, SecretString: aws.String(v)}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	cache, err := lambdafn.NewKeyringCache(ctx, lambdafn.KeySource{SecretARN: aws.ToString(out.ARN)}, sm, time.Minute, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := cache.Keys
	signer := &rap.Signer{Keys: keys, BaseURL: "https://cb.example/callback", Now: clock}
	old, err := signer.CallbackURL("thread-1", "call-1")
	if err != nil {
		t.Fatal(err)
	}

	put(k2 + "," + k1) // rotation: k2 signs, k1 still verifies
	now = now.Add(30 * time.Second)
	cache.Refresh(ctx)
	if got := keys.CurrentID(); got != "k1" {
		t.Fatalf("before the TTL: current key %q, want k1 (no re-read yet)", got)
	}
	now = now.Add(31 * time.Second)
	cache.Refresh(ctx)
	if got := keys.CurrentID(); got != "k2" {
		t.Fatalf("after the TTL: current key %q, want k2", got)
	}
	u, _ := url.Parse(old)
	if _, err := keys.Verify(u.Query(), now); err != nil {
		t.Fatalf("a URL signed with the older key no longer verifies: %v", err)
	}

	put("not a keyring")
	now = now.Add(2 * time.Minute)
	cache.Refresh(ctx)
	if got := keys.CurrentID(); got != "k2" {
		t.Fatalf("a failed re-read changed the keys: current %q", got)
	}
}
