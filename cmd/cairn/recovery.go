package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

const sweepUsage = `usage: cairn sweep [--aws] [--region R] [--dry-run] [--limit N] [--index-legacy] [--json]
Sends again the deliveries of the AWS World whose SQS message is gone (what the
deployment's sweeper function does on its cron), and prints what it sent.
The World comes from the WORKFLOW_* variables (eval "$(terraform output -raw cli_env)").
  --region R      AWS region (default $AWS_REGION or the profile's region)
  --dry-run       list what a sweep would send, send nothing
  --limit N       send at most N deliveries
  --index-legacy  first index the queue records written by a cairn version older
                  than the sharded list index, so the sweep sees them, and the
                  attributes of runs written before the attrs index, so listings
                  by attribute find them (once after upgrading; reads the whole
                  table and needs dynamodb:Scan)`

const redriveUsage = `usage: cairn redrive --dlq URL [--aws] [--region R] [--max N] [--json]
Moves dead-lettered deliveries from the dead-letter queue at URL back to the
queues their records name, after the cause of their failures is fixed.
The World comes from the WORKFLOW_* variables (eval "$(terraform output -raw cli_env)").
  --dlq URL  the dead-letter queue (terraform output -raw dead_letter_queue_url)
  --region R AWS region (default $AWS_REGION or the profile's region)
  --max N    move at most N messages (default: until the queue is empty)`

// openAWSWorld builds the AWS World from the deployment's variables, with the
// Scheduler when the deployment has one (a swept delivery may be due beyond 15
// minutes), on the clients every --aws command uses (newAWSClients).
func openAWSWorld(ctx context.Context, getenv func(string) string, region string) (*awsworld.World, error) {
	clients, err := newAWSClients(ctx, getenv, region)
	if err != nil {
		return nil, err
	}
	cfg, err := awsworld.ConfigFromEnv(getenv, clients.scheduler)
	if err != nil {
		return nil, err
	}
	w, err := awsworld.New(cfg, clients.dynamodb, clients.sqs)
	if err != nil {
		return nil, fmt.Errorf("AWS World: %w", err)
	}
	return w, nil
}

var sweepCommand = remoteCommand("sweep", sweepErr)

func sweepErr(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	var opts awsworld.SweepOptions
	var jsonOut, awsFlag, indexLegacy bool
	var region string
	fs := flag.NewFlagSet("cairn sweep", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&region, "region", "", "AWS region")
	fs.BoolVar(&awsFlag, "aws", true, "the AWS World (the only one with a sweeper)")
	fs.BoolVar(&opts.DryRun, "dry-run", false, "send nothing")
	fs.IntVar(&opts.Limit, "limit", 0, "send at most N")
	fs.BoolVar(&indexLegacy, "index-legacy", false, "index legacy queue records and run attributes first")
	fs.BoolVar(&jsonOut, "json", false, "print JSON")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, sweepUsage)
		return nil
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if len(pos) > 0 {
		return usageErrorf("unexpected arguments %v", pos)
	}
	if opts.Limit < 0 {
		return usageErrorf("--limit %d: must not be negative", opts.Limit)
	}
	w, err := openAWSWorld(ctx, getenv, region)
	if err != nil {
		return err
	}
	if indexLegacy {
		n, err := w.IndexLegacyQueueRecords(ctx)
		if err != nil {
			return err
		}
		if !jsonOut {
			fmt.Fprintf(stdout, "%d legacy queue records indexed\n", n)
		}
		if n, err = w.IndexRunAttributes(ctx); err != nil {
			return err
		}
		if !jsonOut {
			fmt.Fprintf(stdout, "attributes of %d runs indexed\n", n)
		}
	}
	res, err := w.Sweep(ctx, opts)
	if err != nil {
		return err
	}
	if jsonOut {
		return json.NewEncoder(stdout).Encode(res)
	}
	verb := "sent again"
	if opts.DryRun {
		verb = "would send again"
	}
	fmt.Fprintf(stdout, "%d overdue, %d waiting for their retry or dead-letter queue, %d %s\n", res.Overdue, res.Waiting, len(res.Resent), verb)
	for _, id := range res.Resent {
		fmt.Fprintln(stdout, id)
	}
	return nil
}

var redriveCommand = remoteCommand("redrive", redriveErr)

func redriveErr(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	var opts awsworld.RedriveOptions
	var dlq string
	var jsonOut, awsFlag bool
	var region string
	fs := flag.NewFlagSet("cairn redrive", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&region, "region", "", "AWS region")
	fs.BoolVar(&awsFlag, "aws", true, "the AWS World")
	fs.StringVar(&dlq, "dlq", "", "dead-letter queue URL")
	fs.IntVar(&opts.Max, "max", 0, "move at most N")
	fs.BoolVar(&jsonOut, "json", false, "print JSON")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, redriveUsage)
		return nil
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	if len(pos) > 0 {
		return usageErrorf("unexpected arguments %v", pos)
	}
	if opts.Max < 0 {
		return usageErrorf("--max %d: must not be negative", opts.Max)
	}
	if dlq == "" {
		return usageErrorf("--dlq is required: the dead-letter queue URL (terraform output -raw dead_letter_queue_url)")
	}
	w, err := openAWSWorld(ctx, getenv, region)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := w.Redrive(ctx, dlq, opts)
	if err != nil {
		return err
	}
	if jsonOut {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "moved %d, dropped %d (already done), left %d (not deliveries) in %s\n", len(res.Moved), res.Dropped, res.Skipped, time.Since(start).Round(time.Millisecond))
	for _, id := range res.Moved {
		fmt.Fprintln(stdout, id)
	}
	return nil
}
