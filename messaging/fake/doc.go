// Package fake provides programmable test doubles for the messaging interfaces,
// with loafer-awsx's fake package's names and behaviour so that tests written
// against it keep compiling and passing: Message (consumer.Message and
// middleware.Message), SQSClient (consumer.SQSClient), SNSClient
// (producer.SNSClient), SchedulerClient (consumer.SchedulerClient) and
// LogHandler, a slog.Handler that captures records for assertions.
//
// Each client method records its input and then calls the matching func field,
// or returns a nil output and a nil error when that field is nil, so a test
// programs only the calls it cares about. For doubles that behave like the
// services themselves (receipt handles, visibility, FIFO groups, redrive), use
// package messagingtest instead.
package fake
