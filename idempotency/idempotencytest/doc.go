// Package idempotencytest holds the conformance suite every idempotency.Store must pass
// (RunStoreSuite) and MemoryStore, the memory store instrumented with request counters
// for unit tests and benchmarks. Programs that need an in-memory store use
// idempotency/memory.
package idempotencytest
