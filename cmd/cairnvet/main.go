// Command cairnvet reports code that breaks the determinism of cairn workflows and
// of Lambda durable functions (package durable): the clock, random numbers,
// goroutines, channels, map iteration order and I/O used in replayed code instead
// of in steps. A workflow re-executes from the start on every delivery and replays
// against its run's event log, so such code takes a different path on replay and
// fails the run with workflow.ErrNondeterminism, or repeats side effects the log
// never recorded. A durable function re-runs from the top on every invocation
// against its checkpoints, with the same consequences.
//
// Run it through go vet:
//
//	go install github.com/cairn-go/cairn/cmd/cairnvet@latest
//	go vet -vettool=$(which cairnvet) ./...
//
// or on its own, with package patterns: cairnvet ./... (go vet with -vettool runs
// only cairnvet, so keep running plain go vet too).
//
// Workflow code is the body of every function or method whose first parameter is a
// workflow.Context (the Run method of each workflow.Workflow among them), and the
// functions and methods of the same package that such code calls statically,
// transitively. Calls into other packages are not followed. Steps are where I/O
// belongs, so a function passed to a workflow operation as a step (the fn of
// workflow.Step or workflow.Go: a function literal, a named function or a method
// value) is not workflow code, and neither is a function literal of a step's shape,
// func(context.Context, I) (O, error), wherever it is written (a step factory, a
// table of steps) unless workflow code calls it: on the spot, or through a local
// variable it was stored in (stamp := func(ctx context.Context, s string) (string,
// error) {...}; stamp(ctx, in)), which makes its body workflow code.
//
// Durable code is found the same way from every function, method or function
// literal with a parameter of type *durable.Context, in any position: a
// durable.Func, the fn of durable.RunInChildContext, a durable.Parallel branch, a
// durable.Map function, a helper taking the Context. The step bodies of package
// durable are not durable code: the fn of durable.Step and durable.StepWith, the
// submit function of durable.WaitForCallback and durable.WaitForCallbackWith, and
// the check function of durable.WaitForCondition, nor a function literal of a
// durable step's shape, func(context.Context) (T, error), unless durable code calls
// it on the spot. A helper that both workflow and durable code reach is checked,
// and reported, as each.
//
// In workflow code cairnvet reports:
//
//   - time.Now, time.Since and time.Until (use workflow.Now), time.Sleep (use
//     workflow.Sleep), and time.After, time.Tick, time.NewTimer, time.NewTicker and
//     time.AfterFunc (use workflow.NewTimer with workflow.Select);
//   - math/rand, math/rand/v2 and crypto/rand (use workflow.Random, or make the value
//     in a step);
//   - go statements (use workflow.Go), select statements (use workflow.Select),
//     channel sends, receives and range over a channel;
//   - range over a map, or over maps.Keys, maps.Values or maps.All (sort the keys,
//     for example with slices.Sorted(maps.Keys(m)));
//   - functions and methods of os, net, net/http, io and io/ioutil (do I/O in a step,
//     workflow.Step), except a few pure ones such as os.IsNotExist, net.ParseIP,
//     http.StatusText and the methods of http.Header;
//   - fmt.Print, fmt.Printf and fmt.Println, fmt.Fprint* to os.Stdout or os.Stderr,
//     and the output functions of the std log package and of *log.Logger: they
//     print again on every replay (log with slog through workflow.NewLogHandler,
//     which drops records while the workflow replays).
//
// In durable code it reports the same, naming what package durable offers instead.
// Package durable has no replay-safe clock or random source, so the clock,
// math/rand, math/rand/v2 and crypto/rand go in a durable.Step, whose result is
// checkpointed; time.Sleep and the timers become dc.Wait; go statements, select
// statements and channels become durable.Parallel or durable.Map (an answer from
// outside, durable.WaitForCallback); I/O goes in a durable.Step; printing goes
// through dc.Logger().
//
// A finding in a function reached through calls names the workflow or durable
// function it was reached from. To accept one, put a directive with a reason on the
// line of the finding or on the line above it:
//
//	for k := range counts { //cairnvet:ignore summing is order-independent
//
// The directive in a function's doc comment skips that whole function, and the
// functions reached only through it. A directive without a reason is reported and
// suppresses nothing.
package main

import "golang.org/x/tools/go/analysis/singlechecker"

func main() { singlechecker.Main(Analyzer) }
