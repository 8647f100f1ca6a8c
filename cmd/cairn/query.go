package main

import (
	"context"
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
	return runNameJSON(ctx, args, stdout, getenv, "query", "runs.query", "arg", "query argument")
}
