// Package memory stores idempotency records in process memory, for local development,
// tests and single-process programs that need no durability: records vanish with the
// process and are not shared between processes. It implements the same conditional
// semantics as the dynamodb store (a live record blocks a new execution; an expired
// record or an in-progress record whose lease ended is taken over; conflicts carry the
// existing record, like DynamoDB's ALL_OLD) and passes idempotencytest.RunStoreSuite.
//
//	manager, err := idempotency.New(memory.New(), idempotency.Options{KeyPrefix: "process-order"})
package memory
