package stack

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// Alarms are what a deployment must hear about at once: a message in any
// dead-letter queue (a user's message, a reply or a wake-up given up on),
// and the slice function failing outside its own error handling (Errors:
// a crash, a timeout, an init failure; a failed slice is a batch item
// failure, not an error) or being throttled (the account's concurrency
// is exhausted: slices wait). Missing data is not breaching: an idle
// deployment publishes no datapoints.
type Alarms struct {
	// DLQ holds one alarm per dead-letter queue, keyed by its construct ID
	// (InputDLQ, DelayDLQ, WakeupDLQ, OutputDLQ).
	DLQ map[string]awscloudwatch.Alarm
	// SliceErrors and SliceThrottles watch the slice function.
	SliceErrors, SliceThrottles awscloudwatch.Alarm
	// Topic is the SNS topic every alarm notifies (StackProps.AlarmTopicARN;
	// nil: none).
	Topic awssns.ITopic
}

// alarmPeriod is the period of every alarm's metric, evaluated once: a
// dead letter is reported within five minutes, and a burst of throttles
// is one notification, not one a minute.
const alarmPeriod = 5 * time.Minute

// addAlarms creates the alarms, each notifying topicARN (when not empty)
// on ALARM and on OK.
func (s *Stack) addAlarms(topicARN string) {
	a := &Alarms{DLQ: map[string]awscloudwatch.Alarm{}}
	if topicARN != "" {
		a.Topic = awssns.Topic_FromTopicArn(s.Stack, jsii.String("AlarmTopic"), jsii.String(topicARN))
	}
	alarm := func(id, description string, metric awscloudwatch.IMetric) awscloudwatch.Alarm {
		al := awscloudwatch.NewAlarm(s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String("agentslice: " + description),
			Metric:             metric,
			Threshold:          jsii.Number(0),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		if a.Topic != nil {
			action := awscloudwatchactions.NewSnsAction(a.Topic)
			al.AddAlarmAction(action)
			al.AddOkAction(action)
		}
		return al
	}
	q := s.Queues
	for _, d := range []struct {
		id, what string
		queue    awssqs.Queue
	}{
		{"InputDLQ", "messages to threads that could not be processed (the reason is a message attribute)", q.InputDLQ},
		{"DelayDLQ", "short-sleep wake-ups, or Scheduler-dead-lettered ones, the delay relay could not deliver", q.DelayDLQ},
		{"WakeupDLQ", "long-sleep wake-ups EventBridge Scheduler could not deliver, not (yet) relayed", q.WakeupDLQ},
		{"OutputDLQ", "agent replies no consumer handled", q.OutputDLQ},
	} {
		a.DLQ[d.id] = alarm(d.id+"Depth", d.id+" is not empty: "+d.what, d.queue.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{
			Period: seconds(alarmPeriod), Statistic: awscloudwatch.Stats_MAXIMUM(),
		}))
	}
	sum := &awscloudwatch.MetricOptions{Period: seconds(alarmPeriod), Statistic: awscloudwatch.Stats_SUM()}
	a.SliceErrors = alarm("SliceErrors", "the slice function failed outside its handler (crash, timeout, init)", s.Slice.MetricErrors(sum))
	a.SliceThrottles = alarm("SliceThrottles", "the slice function was throttled (account concurrency exhausted)", s.Slice.MetricThrottles(sum))
	s.Alarms = a
}
