package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// Output names of the stack (what `cdk deploy --outputs-file` writes and
// the agentslice command line reads).
const (
	OutInputQueueURL   = "InputQueueUrl"
	OutBackgroundURL   = "BackgroundQueueUrl"
	OutInputDLQURL     = "InputDlqUrl"
	OutOutputQueueURL  = "OutputQueueUrl"
	OutDelayQueueURL   = "DelayQueueUrl"
	OutReceiverURL     = "ReceiverUrl"
	OutReceiverFnARN   = "ReceiverFunctionArn"
	OutDSQLEndpoint    = "DsqlEndpoint"
	OutDedupTable      = "DedupTableName"
	OutScheduleGroup   = "ScheduleGroupName"
	OutKeyringSecretID = "CallbackKeyringSecretArn"
	OutCallbackPolicy  = "CallbackInvokePolicyArn"
	OutSliceRoleARN    = "SliceRoleArn"
	OutReceiverRoleARN = "ReceiverRoleArn"
	OutSchedulerRole   = "SchedulerRoleArn" // for a hand-made schedule (docs/aws.md, first-deploy checklist)
	OutWakeupDLQARN    = "WakeupDlqArn"
)

func (s *Stack) addOutputs() {
	out := func(name string, value *string, description string) {
		awscdk.NewCfnOutput(s.Stack, jsii.String(name), &awscdk.CfnOutputProps{
			Value:       value,
			Description: jsii.String(description),
		})
	}
	q := s.Queues
	out(OutInputQueueURL, q.Input.QueueUrl(), "FIFO input queue (agentslice send --queue-url)")
	out(OutBackgroundURL, q.InputBackground.QueueUrl(), "FIFO input queue of background threads (agentslice send --class background)")
	out(OutInputDLQURL, q.InputDLQ.QueueUrl(), "FIFO dead-letter queue of the input queue (poison messages)")
	out(OutOutputQueueURL, q.Output.QueueUrl(), "output queue of agent replies (agentslice tail --queue-url)")
	out(OutDelayQueueURL, q.Delay.QueueUrl(), "delay queue for sleeps up to 900 s")
	out(OutReceiverURL, s.ReceiverURL.Url(), "RAP callback receiver Function URL (IAM auth)")
	out(OutReceiverFnARN, s.Receiver.FunctionArn(), "receiver function; IAM-auth callbacks need lambda:InvokeFunctionUrl and lambda:InvokeFunction (lambda:InvokedViaFunctionUrl=true) on it")
	if s.CallbackInvokePolicy != nil {
		out(OutCallbackPolicy, s.CallbackInvokePolicy.ManagedPolicyArn(), "managed policy with both callback permissions; attach it to tool server roles of this account")
	}
	out(OutDSQLEndpoint, s.Cluster.AttrEndpoint(), "Aurora DSQL endpoint (agentslice migrate)")
	out(OutSliceRoleARN, s.Slice.Role().RoleArn(), "slice function role (agentslice migrate --app-role-arn): connects to DSQL as "+DSQLAppRole)
	out(OutReceiverRoleARN, s.Receiver.Role().RoleArn(), "callback receiver role (agentslice migrate --receiver-role-arn): connects to DSQL as "+DSQLReaderRole+" to look up thread classes")
	out(OutDedupTable, s.Table.TableName(), "DynamoDB table of processed message IDs")
	out(OutScheduleGroup, s.Scheduler.Group.ScheduleGroupName(), "EventBridge Scheduler group of long sleeps")
	out(OutSchedulerRole, s.Scheduler.Role.RoleArn(), "role the long sleeps' schedules run as")
	out(OutWakeupDLQARN, q.WakeupDLQ.QueueArn(), "dead-letter queue of every schedule, read by the delay relay")
	out(OutKeyringSecretID, s.Keyring.SecretArn(), "Secrets Manager secret holding the callback HMAC keyring")
}
