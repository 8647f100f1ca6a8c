// Package consumer polls one SQS queue for one router.Route: concurrent
// pollers with back-pressure from the worker pool, Parallel or PerGroupID
// dispatch, a visibility heartbeat counted from receive time, error
// classification (retry, fatal, backoff), observe-only DLQ detection, the
// Scheduled Retry model for FIFO queues, and batched acknowledgement through
// DeleteMessageBatch (on a router.WithDeleteBatch route) and
// ChangeMessageVisibilityBatch.
//
// With WithDeleteBatch, steady state costs one ReceiveMessage and one
// DeleteMessageBatch per ten messages; without it, one DeleteMessage per
// message, as in loafer-awsx. On shutdown the consumer stops polling, lets running and
// already-received messages finish (bounded by WithShutdownTimeout), releases
// the ones it will not run, and flushes pending acknowledgements with
// context.WithoutCancel so finished messages are still deleted. A message
// whose handler did not return nil is never deleted.
//
// The heartbeat extends a running message's visibility up to the route's
// extension limit. Once it cannot extend any more, it cancels the handler's
// context with cause ErrVisibilityLapsed, a third of the visibility timeout
// before SQS makes the message visible again, and logs it at Error: the
// handler should stop, because after that window the message may be
// delivered again, to this or another consumer, while it still runs.
package consumer
