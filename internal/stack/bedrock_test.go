package stack

import (
	"reflect"
	"sort"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
)

func TestBedrockResources(t *testing.T) {
	t.Parallel()
	bedrock := func(id string, region string) model.Config {
		c := model.Config{Name: id, Provider: model.ProviderBedrock, ModelID: id, ContextWindow: 1000, MaxOutputTokens: 100}
		if region != "" {
			c.Bedrock = &model.BedrockConfig{Region: region}
		}
		return c
	}
	const (
		fm      = "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/"
		fmAny   = "arn:${AWS::Partition}:bedrock:*::foundation-model/"
		profile = "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/"
	)
	tests := []struct {
		name   string
		models []model.Config
		want   []string
	}{
		{"none", nil, nil},
		{"openai only", []model.Config{{Name: "o", Provider: model.ProviderOpenAI, ModelID: "gpt"}}, nil},
		{"foundation model", []model.Config{bedrock("anthropic.claude-3-haiku-20240307-v1:0", "")},
			[]string{fm + "anthropic.claude-3-haiku-20240307-v1:0"}},
		{"foundation model, own region", []model.Config{bedrock("amazon.nova-lite-v1:0", "eu-west-1")},
			[]string{"arn:${AWS::Partition}:bedrock:eu-west-1::foundation-model/amazon.nova-lite-v1:0"}},
		{"inference profile", []model.Config{bedrock("us.anthropic.claude-sonnet-4-20250514-v1:0", "")},
			[]string{
				fmAny + "anthropic.claude-sonnet-4-20250514-v1:0",
				profile + "us.anthropic.claude-sonnet-4-20250514-v1:0",
			}},
		{"global profile", []model.Config{bedrock("global.anthropic.claude-sonnet-4-20250514-v1:0", "")},
			[]string{
				fmAny + "anthropic.claude-sonnet-4-20250514-v1:0",
				profile + "global.anthropic.claude-sonnet-4-20250514-v1:0",
			}},
		{"profile ARN", []model.Config{bedrock("arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0", "")},
			[]string{
				"arn:aws:bedrock:*::foundation-model/amazon.nova-pro-v1:0",
				"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0",
			}},
		{"application profile ARN", []model.Config{bedrock("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123", "")},
			[]string{
				"arn:aws:bedrock:*::foundation-model/*",
				"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123",
			}},
		{"provisioned model ARN", []model.Config{bedrock("arn:aws:bedrock:us-east-1:123456789012:provisioned-model/xyz", "")},
			[]string{"arn:aws:bedrock:us-east-1:123456789012:provisioned-model/xyz"}},
		{"duplicates merged", []model.Config{
			bedrock("us.amazon.nova-lite-v1:0", ""),
			{Name: "again", Provider: model.ProviderBedrock, ModelID: "us.amazon.nova-lite-v1:0"},
		}, []string{fmAny + "amazon.nova-lite-v1:0", profile + "us.amazon.nova-lite-v1:0"}},
		{"Fn::Sub syntax escaped", []model.Config{bedrock("x.${AWS::Region}", "")},
			[]string{fm + "x.${!AWS::Region}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := bedrockResources(&model.Catalog{Models: tt.models})
			sort.Strings(tt.want) // the result is sorted
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("bedrockResources() =\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}
