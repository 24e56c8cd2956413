package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Scheduler is what long sleeps need: the group the slice function creates
// its one-time schedules in, and the role those schedules run as.
type Scheduler struct {
	Group awsscheduler.ScheduleGroup
	// Role may only send messages to the input queue and the wake-up DLQ
	// (the schedules use the
	// universal target arn:aws:scheduler:::aws-sdk:sqs:sendMessage, see
	// internal/timers), and only EventBridge Scheduler, for schedules of this
	// group, may assume it.
	Role awsiam.Role
}

// newScheduler creates the group and the role. The role sends wake-ups to
// input and, for schedules that failed after Scheduler's retries, their
// dead-letter events to dlq (Scheduler sends those as the schedule's role).
func newScheduler(scope constructs.Construct, input, dlq awssqs.IQueue, removal awscdk.RemovalPolicy) *Scheduler {
	group := awsscheduler.NewScheduleGroup(scope, jsii.String("Schedules"), &awsscheduler.ScheduleGroupProps{
		RemovalPolicy: removal,
	})
	role := awsiam.NewRole(scope, jsii.String("SchedulerRole"), &awsiam.RoleProps{
		Description: jsii.String("agentslice: EventBridge Scheduler wake-ups into the input queue"),
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			// Confused-deputy guard: only schedules of this group.
			Conditions: &map[string]interface{}{
				"StringEquals": map[string]interface{}{
					"aws:SourceAccount": awscdk.Aws_ACCOUNT_ID(),
					"aws:SourceArn":     group.ScheduleGroupArn(),
				},
			},
		}),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: jsii.Strings(*input.QueueArn(), *dlq.QueueArn()),
	}))
	return &Scheduler{Group: group, Role: role}
}

// scheduleARNs is the ARN pattern of every schedule in the group.
func (s *Scheduler) scheduleARNs(stack awscdk.Stack) *string {
	return stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("scheduler"),
		Resource:     jsii.String("schedule"),
		ResourceName: jsii.String(*s.Group.ScheduleGroupName() + "/*"),
	})
}
