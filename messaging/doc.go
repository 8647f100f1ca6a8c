// Package messaging is the root of cairn's SQS/SNS message-processing toolkit.
//
// The work is split into small packages you compose: conn builds an aws.Config,
// router binds a queue to a middleware.Handler, consumer polls one queue with a
// worker pool and batched acknowledgement, broker runs one consumer per route,
// producer publishes to SNS, typed adds generic handlers and producers, idgen
// generates FIFO IDs, lambda reuses the same routes inside an AWS Lambda SQS
// event source, and errors holds the sentinels and the error classification
// (retry, fatal, backoff) that every package shares. For tests, messagingtest
// has in-memory SQS, SNS and Scheduler services that follow AWS's rules, and
// fake has loafer-awsx's programmable doubles.
package messaging
