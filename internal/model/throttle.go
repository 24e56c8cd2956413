package model

import (
	"errors"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/openai/openai-go/v3"
)

// IsThrottled reports whether err (as a model of this package returns it)
// is the provider refusing work for lack of quota: Bedrock's
// ThrottlingException or ServiceQuotaExceededException, or HTTP 429 from
// either provider. Callers count these per model; the engine retries them.
func IsThrottled(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException":
			return true
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == 429 {
		return true
	}
	var oe *openai.Error
	return errors.As(err, &oe) && oe.StatusCode == 429
}
