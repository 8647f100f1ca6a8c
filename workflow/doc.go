// Package workflow is cairn's durable workflow runtime: define workflows as Go types
// with a Run method and steps as plain functions, start and inspect runs, and let any
// [worlds.World] store them.
//
// A workflow runs on its own goroutine against its run's event log: each [Step],
// [Go], [Sleep] and [CreateHook] call gets a correlation ID from its position in call
// order ("step_1", "wait_2", "hook_3"), and a call whose result is already in the
// log returns it without running anything. When the code reaches an operation the
// log has not resolved, the runtime appends the events that create it in one write,
// queues the deliveries that will resolve it (a step attempt, a timer) and
// suspends the workflow: its goroutine parks, and stays parked in the client's run
// cache (see below) until a later delivery of the run resumes it, or is ended with
// [runtime.Goexit] when the run leaves the cache. Goexit, unlike a panic, cannot be
// swallowed by a recover in user code; deferred functions then run, and any
// workflow operation they call ends the goroutine again. A run not in the cache is
// replayed: its workflow is executed from the start, every resolved call returning
// its logged result. Workflow code must therefore be deterministic: take the time
// from [Now], random values from [Random], and do all I/O in steps. Code that
// diverges from its history is reported, when it is replayed, with an error
// matching [ErrNondeterminism] naming the position, the recorded operation and the
// one the code asked for.
//
// Workflow operations must be called on the workflow's own goroutine: one
// called from a goroutine the code started fails at once with a
// *[GoroutineError] naming the call (matching [ErrNotWorkflowGoroutine]); run
// steps in parallel with [Go]. Each turn of workflow code, from the moment a
// delivery starts or resumes it until it reaches an operation that waits or
// returns, is bounded by [Config].DeadlockTimeout (5 s by default): code that
// blocks on a channel, a mutex or a sleep of its own is given up on with a
// *[DeadlockError], so a delivery always ends whatever the code does. The
// goroutine itself is the code's: the runtime cannot stop it, and it ends at
// its next workflow operation, or stays until its own wait ends.
//
// A bug in workflow code does not fail runs for good. When the code panics,
// diverges from its log, does not yield, or calls runtime.Goexit, the default
// [CodeErrorPolicy], [BlockOnCodeError], keeps the run running and flags it as
// blocked: a run_blocked event holds the error and its stack, [worlds.Run].Blocked
// shows it (as do cairn inspect and the web UI, and [Blocked] turns it into a
// *[BlockedError]), and the run is delivered again with a backoff that doubles
// from [Config].BlockedRetry's Initial (1 s) up to its Max (10 min). Nothing
// the failing code reached is recorded, so deploying code that gets past the
// failure resumes the run where its log stands, every step run once; its first
// delivery records run_unblocked. [FailOnCodeError], set for a client with
// [Config].CodeErrors or for one workflow with [OnCodeError] in [Use], fails
// the run at once instead. A step's failure, or an error the code returns, is
// not a code error and ends the run as the code decides.
//
// Steps run at least once, with a retry policy: a step without [WithRetry] uses
// [Config].RetryPolicy, by default [DefaultRetryPolicy] (3 attempts, 1s then 2s
// apart); in a [RetryPolicy] given with WithRetry, zero fields mean Temporal's
// defaults (unlimited attempts, 1s, multiplier 2, capped at 100 times the initial
// interval, with jitter), so RetryPolicy{} retries until the step succeeds or
// returns a non-retryable error. A bad policy is a *[ConfigError] naming the field,
// from NewClient or from the step call, before anything is recorded. A step that
// is the only new operation the code reaches runs
// inline, in the workflow's delivery, recorded as started in the same append that
// creates it; its outcome is handed to the code at once and appended together with
// whatever the code reaches next (the next step, a sleep, a hook, the run's end),
// so a sequential workflow costs about one World write per step. A process that
// dies between a step's end and that write leaves the step started without an
// outcome: the delivery's redelivery runs it again. Parallel steps, retries, steps
// reached after the entry point's hand-off time, the step after every 64 run
// inline by one delivery, and every step with [Config].QueueSteps run in
// deliveries of their own. A step returning an error wrapped with [Fatal], a
// non-retryable [ApplicationError], or an error whose type name is in the
// policy's NonRetryableErrorTypes is not retried.
//
// Errors: a step's failure is recorded with its message, a stable type name and
// JSON details ([worlds.ErrorInfo]), and workflow code reads it back the same live
// and on replay, as a *[StepError] that errors.As turns into an
// *[ApplicationError] ([NewError], [NewNonRetryableError], [ErrorDetails]) and,
// for Go error types registered in [Config].ErrorTypes ([NewErrorType]), into a
// value of the original type. The type name of an unregistered error is the Go
// type of the first error in its chain that is not a plain wrapper (fmt.Errorf's
// %w, errors.Join, Fatal); the runtime's own are [ErrorTypePanic] and
// [ErrorTypeHeartbeatTimeout]. A run that fails with a step's error records that
// step's type and details, and [RunError] unwraps the same way.
//
// Heartbeats: a long step calls [Heartbeat] with its progress; with
// [WithHeartbeatTimeout] an attempt that stops heartbeating is failed with a
// retryable [ErrorTypeHeartbeatTimeout] error well before the delivery's lease
// runs out, whether its process hangs or died, and the next attempt resumes from
// [HeartbeatDetails]. Steps may write chunks to named streams with [WriteStream];
// clients read them with [Client.ReadStream].
//
// Child runs and long-lived runs: [StartChild] starts a run of another workflow
// whose end resolves a [Future] in the parent, recorded as one operation of the
// parent's log; the child's ID is derived from the parent's ([ChildRunID]), and
// its end is appended to the parent's log, which wakes the parent. Cancelling the
// parent cancels its children; cancelling a child wakes the parent with the
// cancellation. [ContinueAsNew] ends a run and starts
// the next run of its chain with new input and an empty log, so a run that loops
// for months keeps its replay cost bounded; [Run.Result] follows the chain.
// [Links] reads the links between runs for tools.
//
// Signals are messages into a running run, addressed by run ID and name:
// [Signal] (or the RPC's runs.signal, `cairn runs signal`, the web UI) buffers
// one in the run's log, one World write, and the code reads the signals of a
// name in the order sent with a [SignalChannel] ([NewSignalChannel]): Receive
// waits, TryReceive does not, and the channel is [Selectable], so a signal
// with a timeout is a [Select] on the channel and a [NewTimer]. A signal sent
// before the code asks, even before the run started, waits for it, and
// [SignalWithStart] starts the run and signals it in one call. Hooks are for
// senders outside that know only a token (a webhook); signals are for callers
// that know the run. [SetQueryHandler] and [Query] read a live run's state
// without recording anything, and [UpsertAttributes] sets attributes that
// listings filter on (worlds.RunFilter.Attributes). docs/signals-and-queries.md
// maps Temporal's signals, signal-with-start, queries and search attributes to
// these, and says why updates are not there yet.
//
// Cancellation reaches the code: after [Client.Cancel] (or the RPC's
// runs.cancel, or the web UI, all through [worlds.RequestCancel]) the run's next
// blocking operation returns an error matching [ErrCancelled], operations
// started afterwards do not run, and steps running in the cancelling process see
// their context cancelled. Cleanup runs under [WithoutCancel]; when the code
// returns, the run ends cancelled and its children are cancelled the same way.
//
// Changing code under runs in flight: [Version] lets a run that already went
// past a change point keep the path it took, while runs that reach it under the
// new code take the new one, recorded per run; [NewTimer] and [Select] wait
// for whichever of several futures (steps, timers, hook payloads, child runs)
// resolves first, the same one on every replay.
//
// Reset is the way out for a run a bad deploy broke: [Client.Reset] (or the
// RPC's runs.reset, or `cairn runs reset RUN --to SEQ|last-step`, all through
// [worlds.ResetRun]) starts a new run from a prefix of the old run's history,
// up to an event ([ResetToEvent]) or to its last completed step
// ([ResetToLastStep]). The new run replays the copied steps, timers and hook
// payloads with the code deployed now, so they are not run again, and goes on
// live from there; it records [worlds.AttrResetFrom]. An old run still live ends
// cancelled with [worlds.AttrResetTo] naming the new run, and its hook tokens
// move to the new run. A point inside a step or timer, at the run's end or out
// of range is refused with a *[worlds.ResetPointError].
//
// Running: [Use] turns a workflow value into a [worlds.Runner]; [Client.Serve] runs
// a World's deliveries in-process (the embedded World), and [Client.Runner] wraps
// runners for a World's own worker entry point so they use the client's clock,
// logger, observer and limits. Deliveries are at least once and handled
// idempotently: a step already completed is never run again, duplicate or stale
// attempts are acknowledged, and a delivery that was redelivered re-queues the
// deliveries of pending operations in case its first run died between writing and
// queueing.
//
// Cost: a [Client] keeps the executions of suspended runs in a run cache
// ([Config].Cache, on by default: at most DefaultCacheMaxRuns runs and
// DefaultCacheMaxBytes of estimated memory, a run idle for DefaultCacheIdleTTL
// evicted, least recently used first). A delivery of a cached run reads only the
// events appended since the execution's last one ([worlds.EventFilter].AfterSeq)
// and resumes it, and a step delivery of a cached run takes the step's function
// from the execution, so a run of n sequential steps costs O(1) reads, writes and
// CPU per step, O(n) in all. The cache lives in the process, so it serves the
// deliveries that process receives: all of them on the embedded World, the warm
// invocations of one Lambda execution environment through [Client.Runner]. A
// delivery the cache cannot serve replays the run, which costs O(n) for a run of
// n operations: the first delivery in a process, a run evicted or advanced by
// another process meanwhile (detected by the events the execution did not append
// itself), a redelivery after a failure, and every delivery when the cache is off
// ([CacheConfig].Disabled, or the environment variable named by [CacheEnv] set to
// "off"). A cache hit resumes exactly the state a replay would rebuild; workflow
// code that is not deterministic may diverge only on replay. [Client.CacheStats],
// the [CacheObserver] callbacks, workflowprom's cache counters and workflowotel's
// span attribute show how deliveries are served.
//
// Observability seams for tracing and metrics: [InfoFrom] reads the run, step and
// attempt identity from any context the runtime hands out; [NewLogHandler] wraps a
// slog.Handler so workflow code logs each record once, not again on every replay;
// and [Observer] in [Config] receives live run and step-attempt events, never
// replayed ones.
package workflow
