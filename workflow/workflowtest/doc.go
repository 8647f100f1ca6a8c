// Package workflowtest tests cairn workflows in memory, and checks a recorded
// history against the current code before a deploy.
//
// An [Env] runs workflows on an in-memory World with a virtual clock: deliveries run
// on the test's goroutine, and whenever nothing is due the clock jumps to the next
// due delivery, so a 30-day [workflow.Sleep] returns at once and [workflow.Now]
// moves 30 days on. [Stub] replaces a step by name, [Env.Calls] lists the attempts
// of a step (stubbed or real), [Env.ResumeHook] sends a payload to a hook, and
// [Run.Ops] lists what a run recorded: its steps with inputs, outputs and attempts,
// its sleeps and its hooks, in call order. [StubChild] replaces a child workflow
// the way Stub replaces a step. [Env.At] runs a callback when the virtual clock
// reaches a time, before anything due later, so a hook payload can arrive while a
// timer is pending; [Env.RunDue] runs only what is due now, without moving the
// clock, and [Env.Advance] moves it.
//
// [Replay] re-executes workflow code against a history exactly as
// `cairn inspect events <run ID> --json --all` prints it, without running any
// step, and fails the test when the code no longer matches the history: an
// operation inserted, removed or reordered in a way in-flight runs cannot follow.
// Run it in CI over histories of in-flight runs to check that a change is safe to
// deploy.
package workflowtest
