// Package messagingtest provides test doubles for the messaging packages: an
// in-memory SQS (standard and FIFO queues, visibility, receipt handles, group
// locking, redrive, API call counters), an in-memory SNS that fans out to it,
// a fake EventBridge Scheduler, a fake clock, and RunConsumerSuite, the one
// conformance suite every SQS implementation (fake or emulator) must pass.
package messagingtest
