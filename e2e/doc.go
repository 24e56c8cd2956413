// Package e2e is the local cloud test of the serverless deployment: the
// real bootstraps of cmd/slicefn, cmd/rapreceiver and cmd/delayrelay under
// the AWS Lambda Runtime Interface Emulator, against fauxqs (SQS), DynamoDB
// Local and PostgreSQL, with lambdatest.Poller playing Lambda's SQS event
// source mappings and an in-process kumo server playing EventBridge
// Scheduler and Secrets Manager.
//
// The tests carry the build tag e2e and need the bootstraps built and the
// services running: run them with `make e2e` (scripts/e2e.sh), which does
// both. This file holds no code; it keeps the package buildable without
// the tag.
package e2e
