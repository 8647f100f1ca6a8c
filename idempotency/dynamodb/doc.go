// Package dynamodb stores idempotency records in an Amazon DynamoDB table with the
// layout of the TypeScript Powertools DynamoDBPersistenceLayer (v2.35.0): attributes
// id, status, expiration, in_progress_expiration, data (the response as native
// AttributeValues) and validation, optionally under a static partition key with the
// idempotency key as sort key. Records written by either library are read by the other.
package dynamodb
