// Package testenv gives integration tests clients for the real engines the test
// script starts (DynamoDB Local, fauxqs for SQS and SNS, Redis and Valkey), plus
// per-test unique names and cleanup so tests can run with t.Parallel without
// seeing each other's tables, queues, topics or keys.
//
// Endpoints come from the environment: DYNAMODB_ENDPOINT, SQS_ENDPOINT,
// SNS_ENDPOINT, REDIS_ADDR and VALKEY_ADDR. When a variable is unset the test is
// skipped, except when CI=true, where a missing service fails the test: on CI
// nothing may be silently skipped. Credentials are the static pair test/test and
// the region is AWS_REGION, or us-east-1 when that is unset.
package testenv
