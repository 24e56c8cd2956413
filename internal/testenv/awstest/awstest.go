// Package awstest builds aws-sdk-go-v2 configuration for tests that talk to
// local stand-ins of AWS services (DynamoDB Local, fauxqs, in-process
// servers): static credentials, region us-east-1, no shared config files.
// Point each client at its server with BaseEndpoint.
//
// It must not be imported by non-test code.
package awstest

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Region is the region every local client uses.
const Region = "us-east-1"

// Config returns a configuration with static credentials and Region.
func Config() aws.Config {
	return aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}
}

// Name returns a name derived from the test's name that is safe for tables,
// queues and schedules: letters, digits, '-' and '_', at most 60 bytes, plus
// the suffix.
func Name(t testing.TB, suffix string) string {
	var b strings.Builder
	for _, r := range t.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := b.String()
	if len(s) > 60 {
		s = s[len(s)-60:]
	}
	return s + suffix
}
