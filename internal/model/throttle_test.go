package model

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"
	"github.com/openai/openai-go/v3"
)

func TestIsThrottled(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("bedrock model m: streaming: %w", &smithy.GenericAPIError{Code: "ThrottlingException"}), true},
		{&smithy.GenericAPIError{Code: "ServiceQuotaExceededException"}, true},
		{fmt.Errorf("openai model m: %w", &openai.Error{StatusCode: 429}), true},
		{&smithy.GenericAPIError{Code: "ValidationException"}, false},
		{&openai.Error{StatusCode: 500}, false},
		{errors.New("connection reset"), false},
	} {
		if got := IsThrottled(c.err); got != c.want {
			t.Errorf("IsThrottled(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
