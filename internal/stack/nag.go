package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// checkNag adds cdk-nag's AwsSolutions rule pack to the stack: at synth
// (`make synth`, and the stack tests) every finding not suppressed here is
// an error annotation, which fails the synth. Each suppression is scoped to
// one resource (and, for IAM5, to the exact wildcard resources) and says
// why the rule does not apply.
func (s *Stack) checkNag() {
	awscdk.Aspects_Of(s.Stack).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{
		Verbose: jsii.Bool(true),
		Reports: jsii.Bool(false),
	}), nil)
	for _, sup := range nagSuppressions(s) {
		cdknag.NagSuppressions_AddResourceSuppressions(sup.on, &[]*cdknag.NagPackSuppression{sup.rule}, jsii.Bool(true))
	}
}

type nagSuppression struct {
	on   any // the construct (and its children)
	rule *cdknag.NagPackSuppression
}

// nagSuppressions are the AwsSolutions findings the stack accepts, each
// with its reason.
func nagSuppressions(s *Stack) []nagSuppression {
	regex := func(re string) any { return map[string]any{"regex": re} }
	return []nagSuppression{
		{s.Keyring, &cdknag.NagPackSuppression{
			Id: jsii.String("AwsSolutions-SMG4"),
			Reason: jsii.String("The callback keyring is rotated in two manual steps (docs/aws.md, Rotate the callback key): " +
				"a rotation Lambda would replace the signing key at once and invalidate every callback URL in flight."),
		}},
		{s.Slice.Role(), &cdknag.NagPackSuppression{
			Id: jsii.String("AwsSolutions-IAM5"),
			Reason: jsii.String("Cross-region inference profiles route a request to the foundation model in any region of their " +
				"geography, so the foundation model ARN needs a region wildcard; the profile itself is pinned to one ARN, " +
				"and an application inference profile's models cannot be known at synth (bedrock.go)."),
			AppliesTo: &[]any{regex(`/^Resource::arn:<AWS::Partition>:bedrock:\*::foundation-model\/.+$/g`),
				regex(`/^Resource::arn:[a-z-]+:bedrock:\*::foundation-model\/.+$/g`)},
		}},
		{s.Slice.Role(), &cdknag.NagPackSuppression{
			Id: jsii.String("AwsSolutions-IAM5"),
			Reason: jsii.String("Schedule names are derived per (thread, tool call) at run time (timers.ScheduleName); " +
				"the wildcard covers only schedules of this stack's own schedule group."),
			AppliesTo: &[]any{regex(`/^Resource::arn:<AWS::Partition>:scheduler:<AWS::Region>:<AWS::AccountId>:schedule\/.+\/\*$/g`)},
		}},
	}
}
