package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The generated keyring secret: the JSON of rap.KeyringSecret,
// {"id": KeyringKeyID, "secret": <KeyringSecretLength letters and digits>},
// which rap.ParseKeyringSecret reads (the secret as base64: 48 random bytes,
// above rap.MinKeyLen). A test checks the two agree.
const (
	KeyringKeyID        = "k1"
	KeyringSecretLength = 64
)

// newKeyringSecret creates the Secrets Manager secret holding the HMAC
// keyring that signs callback URLs. Secrets Manager generates the key at
// deploy time, so it never appears in the template, the cloud assembly or
// the functions' environment. Rotation is by hand, in two steps, because the
// functions read the secret at cold start (see docs/aws.md).
func newKeyringSecret(scope constructs.Construct) awssecretsmanager.Secret {
	return awssecretsmanager.NewSecret(scope, jsii.String("CallbackKeyring"), &awssecretsmanager.SecretProps{
		Description: jsii.String("agentslice: HMAC keyring signing RAP callback URLs (rap.ParseKeyringSecret)"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			SecretStringTemplate: jsii.String(`{"id":"` + KeyringKeyID + `"}`),
			GenerateStringKey:    jsii.String("secret"),
			PasswordLength:       jsii.Number(KeyringSecretLength),
			ExcludePunctuation:   jsii.Bool(true),
			IncludeSpace:         jsii.Bool(false),
		},
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
}
