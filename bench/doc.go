// Package bench holds side-by-side benchmarks of cairn against peer
// libraries. It is its own module so a competitor's dependencies never reach
// cairn's go.mod.
//
// The messaging benchmarks drive cairn's consumer with an in-memory SQS
// client (memSQS), a no-op handler and 8 workers, standard and FIFO
// (PerGroupID), and report ns/op, allocs/op and SQS API calls per message
// (one op = one message received, handled and deleted). The comparison with
// github.com/silviolleite/loafer-awsx and github.com/JustCodes/loafer-go/v2 is
// blocked: the Go module proxy answers 403 "This module version is not
// available" for both, so they cannot be added here, and a re-implementation
// would not be a fair stand-in.
//
// The workflow benchmarks run a 3-step workflow on cairn's embedded World and
// on github.com/cschleiden/go-workflows with its SQLite backend in one
// `go test -bench Workflow` run, reporting runs/s, allocs/op and, for cairn,
// World writes per step; README.md has the method and the figures.
package bench
