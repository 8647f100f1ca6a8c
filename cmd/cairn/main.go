// Command cairn is the cairn toolkit's command line: `cairn demo` runs a durable
// order-fulfilment workflow on the embedded World, `cairn dev` serves it with a
// web UI, `cairn inspect` shows the runs, steps, events, hooks and streams of a
// World, `cairn version` prints the version.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: cairn <demo|dev|inspect|version>")
		return 2
	}
	switch args[0] {
	case "demo":
		if err := demo(ctx, stdout); err != nil {
			fmt.Fprintln(stderr, "cairn demo:", err)
			return 1
		}
		return 0
	case "dev":
		return dev(ctx, args[1:], stdout, stderr)
	case "inspect":
		return inspect(ctx, args[1:], stdout, stderr)
	case "runs":
		return runsCommand(ctx, args[1:], stdout, stderr)
	case "hooks":
		return hooksCommand(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "cairn", version)
		return 0
	}
	fmt.Fprintf(stderr, "cairn: unknown command %q\nusage: cairn <demo|dev|inspect|version>\n", args[0])
	return 2
}
