package stack

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/jsii-runtime-go"
)

// Agents that do not fit the slice function's 4 KB of environment ship as a
// file in its code asset: the asset is then the prebuilt bootstrap plus
// AgentsFileName, and AGENTSLICE_AGENTS_FILE names the file (relative to
// the function's code directory, LAMBDA_TASK_ROOT, which
// lambdafn.Reader.File resolves) instead of AGENTSLICE_AGENTS holding the
// document. Agents that fit stay in the environment, so a small deployment's
// asset is the bare bootstrap, as before.

// AgentsFileName is the agents document's file name in the slice
// function's asset, and the value of EnvAgentsFile.
const AgentsFileName = "agents.json"

// agentsBundle bundles the slice function's asset locally (no Docker): it
// copies the prebuilt bootstrap and writes the agents document next to it.
// It implements awscdk.ILocalBundling; the CDK calls TryBundle while the
// function is being defined.
type agentsBundle struct {
	bootstrap string // binDir/slicefn/bootstrap
	agents    []byte // the compacted document
	err       error  // what TryBundle failed on, reported by New
}

// TryBundle writes the asset into outputDir. It always reports that it
// bundled: on failure the CDK's fallback would be a Docker build, whose
// error would hide this one; New returns b.err instead.
func (b *agentsBundle) TryBundle(outputDir *string, _ *awscdk.BundlingOptions) *bool {
	b.err = b.write(*outputDir)
	return jsii.Bool(true)
}

func (b *agentsBundle) write(dir string) error {
	bin, err := os.ReadFile(b.bootstrap)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bootstrap"), bin, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, AgentsFileName), b.agents, 0o644)
}

// agentsAssetCode is the slice function's code with the agents file. The
// asset's hash is that of the bundle, so a change to the agents (or the
// binary) deploys a new version.
func agentsAssetCode(binDir string, agents []byte) (awslambda.Code, *agentsBundle) {
	b := &agentsBundle{bootstrap: filepath.Join(binDir, FnSlice, "bootstrap"), agents: agents}
	code := awslambda.Code_FromAsset(jsii.String(filepath.Join(binDir, FnSlice)), &awss3assets.AssetOptions{
		AssetHashType: awscdk.AssetHashType_OUTPUT,
		Bundling: &awscdk.BundlingOptions{
			// Required by the CDK, never pulled: TryBundle always bundles.
			Image: awscdk.DockerImage_FromRegistry(jsii.String("agentslice-bundles-locally")),
			Local: b,
		},
	})
	return code, b
}

// agentsInEnv reports whether the agents document fits the slice
// function's environment next to the rest (checkEnvBudget with it).
func agentsInEnv(catalog, toolServers, modelName, agents string) bool {
	return checkEnvBudget(catalog, toolServers, modelName, agents) == nil
}

// bundleError is the PropsError for a failed agents bundle.
func bundleError(b *agentsBundle) error {
	return &PropsError{Field: "Agents", Reason: fmt.Sprintf("writing %s into the slice function's asset: %v", AgentsFileName, b.err), Err: b.err}
}
