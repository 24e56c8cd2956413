package sqsq

import (
	"errors"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/agentslice/agentslice/internal/runtime"
)

// refusedCodes are the SQS error codes that blame the message itself:
// sending it again cannot succeed. Codes may come bare or with a prefix
// such as "AWS.SimpleQueueService.".
var refusedCodes = []string{"InvalidMessageContents", "InvalidParameterValue", "MissingParameter"}

// Refused reports whether err says SQS refused a message for what it is
// (its contents, its size, its parameters), as opposed to a failure that may
// pass (network, throttling, permissions, a missing queue).
func Refused(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorFault() == smithy.FaultServer {
		return false
	}
	code := api.ErrorCode()
	for _, c := range refusedCodes {
		if code == c || strings.HasSuffix(code, "."+c) || strings.HasSuffix(code, "#"+c) {
			return true
		}
	}
	return false
}

// permanentIfRefused wraps err in runtime.Permanent when SQS refused the
// message itself.
func permanentIfRefused(err error) error {
	if Refused(err) {
		return runtime.Permanent(err)
	}
	return err
}
