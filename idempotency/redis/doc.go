// Package redis stores idempotency records in Redis or Valkey with the semantics of
// the TypeScript Powertools CachePersistenceLayer (v2.35.0): each record is one JSON
// string under the idempotency key, acquired with SET NX EX, with a short lock key
// (<key>:lock) guarding the takeover of orphaned records.
package redis
