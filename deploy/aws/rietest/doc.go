// Package rietest runs the deploy/aws Lambda functions (api, webhook, worker and
// sweeper) as AWS runs them: each is built by scripts/lambda, exactly as
// `make lambda` builds it but for the host's architecture, and served by AWS's
// Lambda Runtime Interface Emulator (aws-lambda-rie), against DynamoDB Local and
// the SQS emulator. Its test drives the deploy/aws approval walk-through with
// the events AWS sends: Function URL payloads (format 2.0) to the api and
// webhook functions, SQS batches built from the messages on the task queue to
// the worker (deleting those it does not report in batchItemFailures, as the
// event source mapping does), and the Scheduler's input to the sweeper.
//
// The package holds only tests. ./scripts/test installs the emulator and sets
// CAIRN_RIE to it; without CAIRN_RIE the test is skipped with a message saying
// so (and fails when CI=true).
package rietest
