// Package workflowprom exports Prometheus metrics for cairn workflows: runs
// started and finished, live step attempts apart from logical step outcomes,
// attempt durations, queue lag, and how the run cache serves deliveries. Counts
// come from the runtime's
// [workflow.Observer], which fires for live work only, so replaying history adds
// nothing; queue lag comes from [Metrics.Runner], which wraps a Runner.
//
// Metric names (namespace "cairn_workflow"):
//
//	| name                                         | type      | labels                  | meaning                                                         |
//	|----------------------------------------------|-----------|-------------------------|-----------------------------------------------------------------|
//	| cairn_workflow_runs_started_total            | counter   | workflow                | runs that began executing (run_started appended)                |
//	| cairn_workflow_runs_finished_total           | counter   | workflow, status        | runs that ended: completed, failed or cancelled                 |
//	| cairn_workflow_step_attempts_total           | counter   | workflow, step, result  | live attempts; result completed, retrying or failed             |
//	| cairn_workflow_steps_finished_total          | counter   | workflow, step, result  | logical step outcomes: completed or failed, once per step       |
//	| cairn_workflow_step_attempt_duration_seconds | histogram | workflow, step          | duration of one live attempt                                    |
//	| cairn_workflow_queue_lag_seconds             | histogram | workflow, kind          | delay from a delivery's due time to the start of its execution  |
//	| cairn_workflow_deliveries_total              | counter   | workflow, kind, outcome | deliveries executed; outcome ok or error (redelivered later)    |
//	| cairn_workflow_cache_hits_total              | counter   | workflow                | workflow deliveries that resumed the run's cached execution     |
//	| cairn_workflow_cache_misses_total            | counter   | workflow, result        | workflow deliveries that replayed: miss, stale or off           |
//	| cairn_workflow_cache_evictions_total         | counter   | workflow, reason        | runs the run cache let go of: max_runs, max_bytes, idle, ...    |
//
// After a crash between a step's side effect and its recorded completion the
// attempt runs again, so step_attempts_total can exceed the attempts the step's
// history shows; steps_finished_total counts each step once it is recorded.
package workflowprom
