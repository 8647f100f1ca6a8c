// Package worlds defines the contract between cairn's durable workflow runtime and
// the storage and queueing backends it runs on, called Worlds.
//
// A World keeps one append-only event log per workflow run. Every state change is an
// [Event] appended through [World.Append]; the run view, its steps, hooks and waits
// are projections of that log, updated by the World in the same atomic write, using
// the shared state machine in [Transition] so every World enforces the same rules.
// Appends are guarded by the run's event count (optimistic concurrency): concurrent
// writers never lose or reorder events. Work is handed to workers through
// [World.Queue] as [QueueInput] deliveries, at least once; the runtime is idempotent
// on redelivery. Invalid transitions are rejected with errors matchable with
// errors.Is against the kinds [ErrEventInvalid], [ErrNotFound], [ErrConflict],
// [ErrGone] and [ErrTooEarly]. A wait_completed is [ErrTooEarly] before the wait's
// resume time unless its Reason is [WaitCancelled], which cancels the timer early;
// the runtime then withdraws the timer's wake-up where the World is a
// [DeliveryCanceller].
//
// Implementations live in sub-packages (worlds/local, worlds/aws) and prove
// themselves with the conformance suite in worlds/worldtest.
package worlds
