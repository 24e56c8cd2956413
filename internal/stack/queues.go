package stack

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Queue settings shared by every queue of the stack.
const (
	// MaxMessageBytes is every queue's MaximumMessageSize: the SQS maximum,
	// which is also sqsq.SQSMaxMessageBytes, the size the senders check.
	MaxMessageBytes = 1 << 20
	// MaxReceiveCount is how often a message may be received before SQS
	// moves it to the queue's DLQ.
	MaxReceiveCount = 5
	// visibilityFactor is AWS's guidance for a queue that triggers a Lambda:
	// visibility timeout at least six times the function timeout, so retries
	// of a throttled batch do not make messages visible again mid-flight.
	visibilityFactor = 6
	retention        = 14 * 24 * time.Hour // the SQS maximum
)

// Queues are the stack's SQS queues.
type Queues struct {
	// Input is the FIFO queue every message to a thread goes through
	// (MessageGroupId = thread); InputDLQ its FIFO dead-letter queue, where
	// the slice function also moves poison messages at once.
	Input, InputDLQ awssqs.Queue
	// InputBackground is the FIFO input queue of background threads (see
	// runtime.Class); its dead letters go to InputDLQ too. A thread's
	// messages all go through its class's queue.
	InputBackground awssqs.Queue
	// Delay is the standard queue for short sleeps (per-message
	// DelaySeconds), drained by the delay relay into Input.
	Delay, DelayDLQ awssqs.Queue
	// Output is the standard queue agent replies go to (`agentslice tail`).
	Output, OutputDLQ awssqs.Queue
	// WakeupDLQ is the standard queue every EventBridge Scheduler schedule
	// names as its DeadLetterConfig: a long sleep's wake-up that Scheduler
	// could not deliver after its retries. The delay relay reads it and
	// delivers the wake-up; what the relay cannot deliver moves on to
	// DelayDLQ.
	WakeupDLQ awssqs.Queue
}

// newQueues creates the queues. sliceTimeout and relayTimeout are the
// timeouts of the functions consuming the input and the delay queue; their
// visibility timeouts follow from them.
func newQueues(scope constructs.Construct, sliceTimeout, relayTimeout time.Duration, removal awscdk.RemovalPolicy) *Queues {
	q := &Queues{}
	fifo := func(id string, dlq awssqs.IQueue, visibility time.Duration) awssqs.Queue {
		props := &awssqs.QueueProps{
			Fifo:                      jsii.Bool(true),
			ContentBasedDeduplication: jsii.Bool(false), // every sender sets sqsq.DedupID
			// High-throughput FIFO: deduplication and throughput per message
			// group (= thread); many threads then do not share one limit.
			DeduplicationScope:  awssqs.DeduplicationScope_MESSAGE_GROUP,
			FifoThroughputLimit: awssqs.FifoThroughputLimit_PER_MESSAGE_GROUP_ID,
		}
		return newQueue(scope, id, props, dlq, visibility, removal)
	}
	standard := func(id string, dlq awssqs.IQueue, visibility time.Duration) awssqs.Queue {
		return newQueue(scope, id, &awssqs.QueueProps{}, dlq, visibility, removal)
	}
	q.InputDLQ = fifo("InputDLQ", nil, 0)
	q.Input = fifo("InputQueue", q.InputDLQ, visibilityFactor*sliceTimeout)
	q.InputBackground = fifo("InputBackgroundQueue", q.InputDLQ, visibilityFactor*sliceTimeout)
	q.DelayDLQ = standard("DelayDLQ", nil, 0)
	q.Delay = standard("DelayQueue", q.DelayDLQ, visibilityFactor*relayTimeout)
	q.WakeupDLQ = standard("WakeupDLQ", q.DelayDLQ, visibilityFactor*relayTimeout)
	q.OutputDLQ = standard("OutputDLQ", nil, 0)
	// Output consumers are people and scripts (`agentslice tail`): the
	// default 30 s to handle a reply before it is received again.
	q.Output = standard("OutputQueue", q.OutputDLQ, 30*time.Second)
	return q
}

func newQueue(scope constructs.Construct, id string, props *awssqs.QueueProps, dlq awssqs.IQueue, visibility time.Duration, removal awscdk.RemovalPolicy) awssqs.Queue {
	props.Encryption = awssqs.QueueEncryption_SQS_MANAGED
	props.EnforceSSL = jsii.Bool(true)
	props.MaxMessageSizeBytes = jsii.Number(MaxMessageBytes)
	props.RetentionPeriod = seconds(retention)
	props.RemovalPolicy = removal
	if visibility > 0 {
		props.VisibilityTimeout = seconds(visibility)
	}
	if dlq != nil {
		props.DeadLetterQueue = &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(MaxReceiveCount)}
	}
	return awssqs.NewQueue(scope, jsii.String(id), props)
}

func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}
