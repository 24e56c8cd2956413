package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Calling a Function URL with auth type AWS_IAM takes two permissions
// (AWS Lambda, "Control access to Lambda function URLs": required for
// function URLs created since October 2025): lambda:InvokeFunctionUrl, and
// lambda:InvokeFunction under the condition lambda:InvokedViaFunctionUrl =
// true. A principal granted only the first gets 403 on every callback.
//
// Principals of other accounts (StackProps.CallbackPrincipals) get both in
// the receiver's resource policy (Function.GrantInvokeUrl writes the two
// AWS::Lambda::Permission resources). Principals of this account need them
// in an identity policy: the stack creates one managed policy with exactly
// those two statements (output CallbackInvokePolicyArn) for the tool
// servers' roles to attach.

// callbackInvokeStatements are the two statements that allow calling fn's
// Function URL with IAM auth.
func callbackInvokeStatements(fn awslambda.IFunction) []awsiam.PolicyStatement {
	return []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("lambda:InvokeFunctionUrl"),
			Resources: jsii.Strings(*fn.FunctionArn()),
			Conditions: &map[string]interface{}{
				"StringEquals": map[string]interface{}{"lambda:FunctionUrlAuthType": "AWS_IAM"},
			},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("lambda:InvokeFunction"),
			Resources: jsii.Strings(*fn.FunctionArn()),
			Conditions: &map[string]interface{}{
				"Bool": map[string]interface{}{"lambda:InvokedViaFunctionUrl": "true"},
			},
		}),
	}
}

// newCallbackInvokePolicy is the managed policy a tool server's role in this
// account attaches to send callbacks to the receiver.
func newCallbackInvokePolicy(scope constructs.Construct, receiver awslambda.IFunction) awsiam.ManagedPolicy {
	st := callbackInvokeStatements(receiver)
	return awsiam.NewManagedPolicy(scope, jsii.String("CallbackInvokePolicy"), &awsiam.ManagedPolicyProps{
		Description: jsii.String("agentslice: lets a RAP tool server (its role) call the callback receiver's Function URL with IAM auth"),
		Statements:  &st,
	})
}
