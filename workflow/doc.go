// Package workflow is cairn's durable workflow runtime: define workflows as Go types
// with a Run method and steps as plain functions, start and inspect runs, and let any
// [worlds.World] store them.
//
// A workflow is re-executed from the start on every delivery and replayed against its
// run's event log: each [Step], [Go], [Sleep] and [CreateHook] call gets a
// correlation ID from its position in call order ("step_1", "wait_2", "hook_3"), and
// a call whose result is already in the log returns it without running anything.
// When the code reaches an operation the log has not resolved, the runtime appends
// the events that create it in one write, queues the deliveries that will resolve it
// (a step attempt, a timer) and suspends the workflow by ending its goroutine with
// [runtime.Goexit]. Goexit, unlike a panic, cannot be swallowed by a recover in user
// code; deferred functions still run, and any workflow operation they call while the
// workflow is suspending ends the goroutine again. Workflow code must therefore be
// deterministic: take the time from [Now], random values from [Random], and do all
// I/O in steps. Code that diverges from its history fails the run with an error
// matching [ErrNondeterminism] naming the position, the recorded operation and the
// one the code asked for.
//
// Steps run at least once, with a retry policy (3 attempts with exponential
// backoff by default). A step that is the only new operation the code reaches runs
// inline, in the workflow's delivery, recorded as started in the same append that
// creates it; parallel steps, retries, steps reached after the entry point's
// hand-off time, and every step with [Config].QueueSteps run in deliveries of their
// own. A step returning an error wrapped with
// [Fatal] is not retried. Steps may write chunks to named streams with [WriteStream];
// clients read them with [Client.ReadStream].
//
// Running: [Use] turns a workflow value into a [worlds.Runner]; [Client.Serve] runs
// a World's deliveries in-process (the embedded World), and [Client.Runner] wraps
// runners for a World's own worker entry point so they use the client's clock,
// logger, observer and limits. Deliveries are at least once and handled
// idempotently: a step already completed is never run again, duplicate or stale
// attempts are acknowledged, and a delivery that was redelivered re-queues the
// deliveries of pending operations in case its first run died between writing and
// queueing. Each step delivery replays the workflow up to the step's call to find
// its function, so a workflow with n operations costs O(n) per delivery.
//
// Observability seams for tracing and metrics: [InfoFrom] reads the run, step and
// attempt identity from any context the runtime hands out; [NewLogHandler] wraps a
// slog.Handler so workflow code logs each record once, not again on every replay;
// and [Observer] in [Config] receives live run and step-attempt events, never
// replayed ones.
package workflow
