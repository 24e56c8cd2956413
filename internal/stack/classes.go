package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/jsii-runtime-go"
)

// backgroundConcurrency is the background event source's MaximumConcurrency:
// the configured value, else the default, never above the interactive one.
func backgroundConcurrency(configured, interactive int) int {
	if configured != 0 {
		return configured
	}
	return max(2, min(DefaultBackgroundMaxConcurrency, interactive))
}

// addBackgroundQueue wires the background input queue: the slice function
// consumes it with its own event source and a lower MaximumConcurrency, and
// every sender (the slice function, the receiver, the delay relay and the
// Scheduler role) may send to it and is told its URL, so each routes a
// message by its thread's class (sqsq.Router).
func (s *Stack) addBackgroundQueue(maxConc, batch int) {
	bg := s.Queues.InputBackground
	s.Slice.AddEventSource(awslambdaeventsources.NewSqsEventSource(bg, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(batch),
		ReportBatchItemFailures: jsii.Bool(true),
		MaxConcurrency:          jsii.Number(maxConc),
	}))
	for _, fn := range []awslambda.Function{s.Slice, s.Receiver, s.Relay} {
		fn.AddEnvironment(jsii.String(EnvBackgroundQueueURL), bg.QueueUrl(), nil)
		bg.GrantSendMessages(fn)
	}
	s.Scheduler.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: jsii.Strings(*bg.QueueArn()),
	}))
}
