package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdsql"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The dedup table's key and TTL attributes (internal/dedup's KeyAttr and
// ExpiryAttr; a test checks they agree).
const (
	DedupKeyAttr    = "pk"
	DedupExpiryAttr = "expires_at"
)

// newDedupTable creates the processed-message-ID table: on-demand, a string
// partition key, TTL on the expiry attribute (expired marks disappear on
// their own) and point-in-time recovery.
func newDedupTable(scope constructs.Construct, retain bool) awsdynamodb.TableV2 {
	return awsdynamodb.NewTableV2(scope, jsii.String("DedupTable"), &awsdynamodb.TablePropsV2{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(DedupKeyAttr), Type: awsdynamodb.AttributeType_STRING},
		Billing:             awsdynamodb.Billing_OnDemand(nil),
		TimeToLiveAttribute: jsii.String(DedupExpiryAttr),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(retain),
		RemovalPolicy:      removalPolicy(retain),
	})
}

// newCluster creates the Aurora DSQL cluster holding history. Its endpoint
// (AttrEndpoint) is the host the slice function and `agentslice migrate`
// connect to with IAM auth.
func newCluster(scope constructs.Construct, retain bool) awsdsql.CfnCluster {
	c := awsdsql.NewCfnCluster(scope, jsii.String("HistoryCluster"), &awsdsql.CfnClusterProps{
		DeletionProtectionEnabled: jsii.Bool(retain),
		Tags: &[]*awscdk.CfnTag{
			{Key: jsii.String("Name"), Value: awscdk.Aws_STACK_NAME()},
		},
	})
	c.ApplyRemovalPolicy(removalPolicy(retain), nil)
	return c
}

func removalPolicy(retain bool) awscdk.RemovalPolicy {
	if retain {
		return awscdk.RemovalPolicy_RETAIN
	}
	return awscdk.RemovalPolicy_DESTROY
}
