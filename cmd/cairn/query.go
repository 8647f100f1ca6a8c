package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// runsQueryUsage and runsQueryHelp are the lines of cairn runs -h about query.
const runsQueryUsage = `       cairn runs query RUN NAME [JSON] [remote flags]`

const runsQueryHelp = `query prints what RUN's query handler NAME (workflow.SetQueryHandler) answers
for the argument JSON (default null). The RPC endpoint answers by replaying RUN
with the workflow's code, writing nothing, so the server needs that code: cairn
dev has it for its demo workflows; a server of your own needs the runners
(workflowui Options.Runners, worldhttp Options.Workflows, awsworld.WithWorkflows).`

// runsQuery runs `cairn runs query RUN NAME [JSON]` through runs.query.
func runsQuery(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	var rf remoteFlags
	fs := flag.NewFlagSet("cairn runs query", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf.register(fs)
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, runsUsage)
		return nil
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if len(pos) < 2 || len(pos) > 3 {
		return usageErrorf("want RUN NAME [JSON], got %d arguments", len(pos))
	}
	arg := ""
	if len(pos) == 3 {
		arg = pos[2]
	}
	raw, err := jsonFlag("JSON", arg)
	if err != nil {
		return usageErrorf("the query argument %q is not JSON (quote strings: '\"text\"')", arg)
	}
	r, err := rf.open(ctx, getenv)
	if err != nil {
		return err
	}
	res, err := r.call(ctx, "runs.query", map[string]any{"runId": pos[0], "name": pos[1], "arg": raw})
	if err != nil {
		return err
	}
	return printJSON(stdout, res)
}
