// Command cairn is the cairn toolkit's command line: `cairn demo` runs a durable
// order-fulfilment workflow on the embedded World, `cairn dev` serves it with a
// web UI, `cairn ui` serves the web UI over an existing World, `cairn inspect`
// shows the runs, steps, events, hooks and streams of a World, `cairn version`
// prints the version. `cairn help` lists every command.
//
// Exit status: 0 on success (and for help), 1 when the command fails, 2 for bad
// usage (an unknown command or flag, a malformed value).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
)

// Exit statuses of every command.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// command is one subcommand of cairn.
type command struct {
	name    string
	summary string // one line for the command list
	usage   string // printed by `cairn help NAME` and NAME -h
	// run executes the command with the arguments after its name and returns
	// the exit status. It is never called with -h or --help among its flags.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists every subcommand, in the order `cairn help` shows them. A new
// command is one entry here and a file of its own.
var commands = []command{
	{"demo", "run a durable order workflow on a temporary embedded World", demoUsage, demoCmd},
	{"dev", "serve the embedded World with the demo workflows and the web UI", devUsage, dev},
	{"ui", "serve the web UI over an existing World (--db or --aws)", uiUsage, uiCmd},
	{"inspect", "show runs, steps, events, hooks and streams of a World", inspectUsage, inspect},
	{"runs", "start, reset, signal or query a run on a deployment (signed for an AWS_IAM Function URL)", runsUsage, runsCommand},
	{"hooks", "list a deployment's hooks with their URLs, resume one by URL or token", hooksUsage, hooksCommand},
	{"sweep", "send again the AWS World's deliveries whose SQS message is gone", sweepUsage, sweepCommand},
	{"redrive", "move dead-lettered deliveries back to their queues", redriveUsage, redriveCommand},
	{"version", "print the version of this binary", versionUsage, versionCmd},
	{"help", "show help for a command", helpUsage, nil}, // run by run itself
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// wantsHelp reports whether args ask for help before any "--".
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelp(a) {
			return true
		}
	}
	return false
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		printUsage(stdout)
		return exitOK
	}
	name := args[0]
	if name == "help" {
		return help(args[1:], stdout, stderr)
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "cairn: unknown command %q\nRun 'cairn help' for the list of commands.\n", name)
		return exitUsage
	}
	if wantsHelp(args[1:]) {
		fmt.Fprintln(stdout, cmd.usage)
		return exitOK
	}
	return cmd.run(ctx, args[1:], stdout, stderr)
}

const helpUsage = `usage: cairn help [command]
  Lists the commands, or prints the usage of one.`

func help(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		printUsage(stdout)
		return exitOK
	case 1:
		if isHelp(args[0]) {
			fmt.Fprintln(stdout, helpUsage)
			return exitOK
		}
		if cmd, ok := lookup(args[0]); ok {
			fmt.Fprintln(stdout, cmd.usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "cairn help: unknown command %q\nRun 'cairn help' for the list of commands.\n", args[0])
		return exitUsage
	}
	fmt.Fprintln(stderr, "cairn help: want at most one command")
	fmt.Fprintln(stderr, helpUsage)
	return exitUsage
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "cairn: durable workflows on AWS and on one machine.\n\nusage: cairn <command> [flags]\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, strings.TrimLeft(`
Run 'cairn help <command>' or 'cairn <command> -h' for a command's flags.
Exit status: 0 on success, 1 when the command fails, 2 for bad usage.
`, "\n"))
}

// noArgs rejects arguments of a command that takes none, returning the exit
// status to stop with and whether to stop.
func noArgs(name, usage string, args []string, stderr io.Writer) (int, bool) {
	if len(args) == 0 {
		return exitOK, false
	}
	fmt.Fprintf(stderr, "cairn %s: unexpected argument %q\n%s\n", name, args[0], usage)
	return exitUsage, true
}
