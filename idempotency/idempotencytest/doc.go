// Package idempotencytest holds the conformance suite every idempotency.Store must pass
// (RunStoreSuite) and an in-memory Store for unit tests and benchmarks.
package idempotencytest
