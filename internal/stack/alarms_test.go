package stack

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
)

// TestAlarms pins the six alarms: each DLQ's depth, the slice function's
// errors and throttles, and their SNS action when a topic is configured.
func TestAlarms(t *testing.T) {
	f := setup(t)
	for _, c := range []struct {
		name    string
		s       *Stack
		tj      map[string]any
		actions any // AlarmActions and OKActions; nil: absent
	}{
		{"default", f.def, f.defJSON, nil},
		{"with topic", f.full, f.fullJSON, []any{fullAlarmTopic}},
	} {
		s, q := c.s, c.s.Queues
		type alarm struct {
			namespace, metric, statistic, dimension string
			value                                   any // the dimension's
		}
		var wants []alarm
		for _, queue := range []awssqs.Queue{q.InputDLQ, q.DelayDLQ, q.WakeupDLQ, q.OutputDLQ} {
			wants = append(wants, alarm{"AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", "QueueName", s.Resolve(queue.QueueName())})
		}
		for _, name := range []string{"Errors", "Throttles"} {
			wants = append(wants, alarm{"AWS/Lambda", name, "Sum", "FunctionName", s.Resolve(s.Slice.FunctionName())})
		}
		alarms := resources(c.tj, "AWS::CloudWatch::Alarm")
		if len(alarms) != len(wants) {
			t.Errorf("%s: %d alarms, want %d", c.name, len(alarms), len(wants))
		}
		for _, w := range wants {
			var found obj
			for _, r := range alarms {
				p := props(r)
				if p["Namespace"] == w.namespace && p["MetricName"] == w.metric &&
					sameJSON(p["Dimensions"], []any{obj{"Name": w.dimension, "Value": w.value}}) {
					found = p
				}
			}
			if found == nil {
				t.Errorf("%s: no alarm on %s %s of %s", c.name, w.namespace, w.metric, js(w.value))
				continue
			}
			for k, v := range (obj{"ComparisonOperator": "GreaterThanThreshold", "Threshold": 0, "EvaluationPeriods": 1,
				"TreatMissingData": "notBreaching", "Period": alarmPeriod.Seconds(), "Statistic": w.statistic,
				"AlarmActions": c.actions, "OKActions": c.actions}) {
				if !sameJSON(found[k], v) {
					t.Errorf("%s: alarm on %s %s: %s = %s, want %s", c.name, w.namespace, w.metric, k, js(found[k]), js(v))
				}
			}
		}
	}
}
