package stack

import (
	"sort"
	"strings"

	"github.com/agentslice/agentslice/internal/model"
)

// Pseudo parameters in the ARN patterns bedrockResources returns; the stack
// resolves them with Fn::Sub.
const (
	subPartition = "${AWS::Partition}"
	subRegion    = "${AWS::Region}"
	subAccount   = "${AWS::AccountId}"
)

// bedrockResources returns the ARNs (Fn::Sub patterns) the slice function
// needs bedrock:InvokeModelWithResponseStream on to run every Bedrock model
// of cat, and nothing more:
//
//   - a foundation model ID ("anthropic.claude-...", one dot): that model in
//     the model's region (bedrock.region, else the stack's);
//   - a cross-region inference profile ID ("us.anthropic.claude-...",
//     "global.amazon.nova-...": a geography prefix, so at least two dots):
//     the profile in the model's region, and the underlying foundation model
//     in every region the profile may route to ("*", which also matches the
//     empty region of global profiles);
//   - an ARN: the ARN itself; for a system inference profile ARN also its
//     foundation model in every region; for an application inference profile
//     (whose models cannot be known here) every foundation model.
//
// Models of other providers need no IAM. The result is sorted and has no
// duplicates; nil when no model uses Bedrock.
func bedrockResources(cat *model.Catalog) []string {
	set := map[string]bool{}
	for _, m := range cat.Models {
		if m.Provider != model.ProviderBedrock {
			continue
		}
		region := subRegion
		if m.Bedrock != nil && m.Bedrock.Region != "" {
			region = m.Bedrock.Region
		}
		id := escapeSub(m.ModelID)
		switch {
		case strings.HasPrefix(id, "arn:"):
			set[id] = true
			parts := strings.SplitN(id, ":", 6)
			if len(parts) < 6 {
				continue
			}
			partition, resource := parts[1], parts[5]
			if profile, ok := strings.CutPrefix(resource, "inference-profile/"); ok {
				set[foundationModel(partition, "*", stripGeography(profile))] = true
			} else if strings.HasPrefix(resource, "application-inference-profile/") {
				set[foundationModel(partition, "*", "*")] = true
			}
		case strings.Count(id, ".") >= 2:
			set["arn:"+subPartition+":bedrock:"+region+":"+subAccount+":inference-profile/"+id] = true
			set[foundationModel(subPartition, "*", stripGeography(id))] = true
		default:
			set[foundationModel(subPartition, region, id)] = true
		}
	}
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for arn := range set {
		out = append(out, arn)
	}
	sort.Strings(out)
	return out
}

func foundationModel(partition, region, id string) string {
	return "arn:" + partition + ":bedrock:" + region + "::foundation-model/" + id
}

// stripGeography drops an inference profile ID's geography prefix:
// "us.anthropic.claude-x" -> "anthropic.claude-x".
func stripGeography(profileID string) string {
	if strings.Count(profileID, ".") < 2 {
		return profileID
	}
	_, rest, _ := strings.Cut(profileID, ".")
	return rest
}

// escapeSub makes s literal inside an Fn::Sub pattern.
func escapeSub(s string) string { return strings.ReplaceAll(s, "${", "${!") }
