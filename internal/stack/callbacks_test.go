package stack

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// TestCallbackInvokeNeedsBothPermissions pins issue 14's first defect: an
// IAM-auth Function URL created since October 2025 needs
// lambda:InvokeFunctionUrl and lambda:InvokeFunction (with
// lambda:InvokedViaFunctionUrl = true). Without the second, every callback
// of a tool server gets 403.
func TestCallbackInvokeNeedsBothPermissions(t *testing.T) {
	f := setup(t)
	// Other accounts: the receiver's resource policy.
	full := f.full.Resolve(f.full.Receiver.FunctionArn())
	principal := "arn:aws:iam::210987654321:role/tool-server"
	must(t, "cross-account InvokeFunctionUrl", func() {
		f.fullT.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), obj{
			"Action": "lambda:InvokeFunctionUrl", "Principal": principal, "FunctionName": full,
			"FunctionUrlAuthType": "AWS_IAM",
		})
	})
	must(t, "cross-account InvokeFunction via URL", func() {
		f.fullT.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), obj{
			"Action": "lambda:InvokeFunction", "Principal": principal, "FunctionName": full,
			"InvokedViaFunctionUrl": true,
		})
	})
	// No InvokeFunction grant without the URL condition: that would allow
	// direct invocations, around the receiver's URL.
	for id, r := range resources(f.fullJSON, "AWS::Lambda::Permission") {
		p := props(r)
		if p["Action"] == "lambda:InvokeFunction" && p["InvokedViaFunctionUrl"] != true {
			t.Errorf("permission %s allows lambda:InvokeFunction outside the Function URL: %s", id, js(p))
		}
	}

	// This account: the managed policy for tool servers' roles.
	for _, c := range []struct {
		name string
		s    *Stack
		tmpl assertions.Template
	}{{"default", f.def, f.defT}, {"full", f.full, f.fullT}} {
		fn := c.s.Resolve(c.s.Receiver.FunctionArn())
		must(t, c.name+" callback policy", func() {
			c.tmpl.HasResourceProperties(jsii.String("AWS::IAM::ManagedPolicy"), like(obj{
				"PolicyDocument": obj{"Version": "2012-10-17", "Statement": []any{
					obj{"Action": "lambda:InvokeFunctionUrl", "Effect": "Allow", "Resource": fn,
						"Condition": obj{"StringEquals": obj{"lambda:FunctionUrlAuthType": "AWS_IAM"}}},
					obj{"Action": "lambda:InvokeFunction", "Effect": "Allow", "Resource": fn,
						"Condition": obj{"Bool": obj{"lambda:InvokedViaFunctionUrl": "true"}}},
				}},
			}))
		})
		if r := resources(f.defJSON, "AWS::IAM::ManagedPolicy"); len(r) != 1 {
			t.Errorf("%s: %d managed policies, want 1", c.name, len(r))
		}
	}

	// Public URL: both permissions for everyone, and no policy to attach.
	pub := f.public.Resolve(f.public.Receiver.FunctionArn())
	for _, want := range []obj{
		{"Action": "lambda:InvokeFunctionUrl", "Principal": "*", "FunctionName": pub, "FunctionUrlAuthType": "NONE"},
		{"Action": "lambda:InvokeFunction", "Principal": "*", "FunctionName": pub, "InvokedViaFunctionUrl": true},
	} {
		must(t, "public "+want["Action"].(string), func() {
			f.publicT.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), want)
		})
	}
	if f.public.CallbackInvokePolicy != nil {
		t.Error("a public receiver URL got a callback invoke policy")
	}
}
