package stack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"
)

// TestNagFindsNothing: cdk-nag's AwsSolutions pack reports no error and no
// warning on any of the test stacks beyond the suppressions in nag.go.
func TestNagFindsNothing(t *testing.T) {
	f := setup(t)
	for _, s := range []*Stack{f.def, f.full, f.public} {
		a := assertions.Annotations_FromStack(s.Stack)
		must(t, *s.StackName()+" nag errors", func() {
			a.HasNoError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
		})
		must(t, *s.StackName()+" nag warnings", func() {
			a.HasNoWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*")))
		})
	}
	for _, sup := range nagSuppressions(f.def) {
		if len(*sup.rule.Reason) < 60 {
			t.Errorf("suppression %s: reason %q is too short to explain itself", *sup.rule.Id, *sup.rule.Reason)
		}
	}
}

// TestNagIsLive checks that the pack does run on a stack New defines: a
// queue added without a dead-letter queue or TLS-only policy is an error.
func TestNagIsLive(t *testing.T) {
	f := setup(t)
	ctx, err := cdkContext("../../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	delete(ctx, "@aws-cdk/core:validateAgainstDefaultRules")
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(filepath.Join(f.dir, "nag.out"))})
	s, err := New(app, "NagLive", StackProps{ModelCatalog: testCatalog, BinDir: filepath.Join(f.dir, "bin")})
	if err != nil {
		t.Fatal(err)
	}
	awssqs.NewQueue(s.Stack, jsii.String("Bare"), nil)
	// The finding is an error annotation, which fails the synth (as it
	// fails `make synth`) and lands in the validation report.
	var synthErr any
	func() {
		defer func() { synthErr = recover() }()
		app.Synth(nil)
	}()
	if synthErr == nil {
		t.Fatal("synth of a stack with a bare queue succeeded; cdk-nag did not run")
	}
	report, err := os.ReadFile(filepath.Join(f.dir, "nag.out", "validation-report.json"))
	if err != nil {
		t.Fatalf("synth failed (%v) without a validation report: %v", synthErr, err)
	}
	for _, want := range []string{"AwsSolutions-SQS3", "AwsSolutions-SQS4", "NagLive/Bare/Resource"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("validation report lacks %s:\n%s", want, report)
		}
	}
	if strings.Contains(string(report), "AwsSolutions-IAM5") || strings.Contains(string(report), "AwsSolutions-SMG4") {
		t.Errorf("a suppressed finding is reported:\n%s", report)
	}
}
