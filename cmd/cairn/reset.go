package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"github.com/cairn-go/cairn/worlds"
)

// runsReset is cairn runs reset: the RPC's runs.reset.
func runsReset(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	var rf remoteFlags
	var to, newRunID, reason string
	fs := flag.NewFlagSet("cairn runs reset", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf.register(fs)
	fs.StringVar(&to, "to", "", "event seq or last-step")
	fs.StringVar(&newRunID, "new-run-id", "", "the new run's ID")
	fs.StringVar(&reason, "reason", "", "the old run's cancel reason")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		_, err := io.WriteString(stdout, runsUsage+"\n")
		return err
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if len(pos) != 1 {
		return usageErrorf("want exactly one run ID, got %d arguments", len(pos))
	}
	if to == "" {
		return usageErrorf("--to is required: an event seq or last-step")
	}
	// Checked here too, so a typo is a usage error before anything is sent.
	if _, err := worlds.ParseResetPoint(to); err != nil {
		return usageErrorf("--to %q: want an event seq (a positive integer) or last-step", to)
	}
	r, err := rf.open(ctx, getenv)
	if err != nil {
		return err
	}
	params := map[string]any{"runId": pos[0], "to": to}
	if newRunID != "" {
		params["newRunId"] = newRunID
	}
	if reason != "" {
		params["reason"] = reason
	}
	res, err := r.call(ctx, "runs.reset", params)
	if err != nil {
		return err
	}
	return printJSON(stdout, res)
}
