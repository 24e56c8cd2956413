// Package lambdafn holds what every agentslice Lambda function shares, and
// the two small functions themselves:
//
//   - the environment contract (the Env* constants; the CDK stack sets
//     exactly these) and a Reader that turns variables into typed configs
//     and reports the first missing or wrong one as an *EnvError naming it;
//   - the callback keyring source (a Secrets Manager secret, or the keyring
//     inline for local runs) and LoadKeyring;
//   - JSON logs (NewLogger, SyncWriter), CloudWatch embedded metric format
//     records (Metrics) and the start-up failure path (Fatal);
//   - the callback receiver (cmd/rapreceiver): FunctionURLHandler turns a
//     Lambda Function URL request into rap.Receiver.Accept and answers 4xx
//     for anything rejected; views and choices go to the thread's history
//     (ReceiverFor);
//   - the delay relay (cmd/delayrelay): RelayHandler moves delayed wake-ups
//     to the FIFO input queue with timers.RelayEvent.
//
// The slice function (internal/serverless) builds on it. The package is
// kept apart from it so that the two small functions do not link the
// engine, the model providers and the database driver: their arm64
// bootstraps are about a third of the slice function's size.
//
// It must not hold agent logic, SQL or wire formats, and it keeps no
// mutable package state.
package lambdafn
