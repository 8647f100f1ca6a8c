// Package idempotency makes operations and typed Lambda handlers run at most once per
// payload while a record is valid, byte-compatible with the TypeScript Powertools
// idempotency utility (@aws-lambda-powertools/idempotency@2.35.0): the same keys
// (<prefix>#<base64(md5(JSON.stringify(deepSort(payload))))>), the same record layout
// and the same lifecycle, so Go and TypeScript functions can share one table. A
// Manager acquires a key with a conditional write, runs the callback, stores its
// response and replays it for repeated requests; stores live in the dynamodb, redis and
// memory (local development and tests) sub-packages and are proven by idempotencytest.
package idempotency
