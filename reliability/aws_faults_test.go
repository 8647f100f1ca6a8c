package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// TestAWSWorldUnderDynamoDBFaults appends from many writers to one hot run of
// the AWS World on DynamoDB Local while transactions are throttled or commit
// with their response lost. A writer that gets an error checks whether its event
// landed (as a caller must after a lost response) and retries only if not.
// Every event must be in the log exactly once, in per-writer order, with
// contiguous sequence numbers.
func TestAWSWorldUnderDynamoDBFaults(t *testing.T) {
	t.Parallel()
	db := testenv.DynamoDB(t)
	sq := testenv.SQS(t)
	s := seed(t)
	t.Logf("CHAOS_SEED=%d", s)
	ctx := context.Background()
	table := testenv.UniqueName(t, "rel")
	if err := awsworld.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, db, table)
	f := newFaults(s, map[string]float64{"ddb-throttle-write": 0.15, "ddb-lost-write": 0.15})
	faulty := &faultyDynamoDB{DynamoDBAPI: db, f: f}
	w, err := awsworld.New(awsworld.Config{
		BaseURL: "https://example.com/v1/workflow", TableName: table,
		QueueURL: "http://127.0.0.1:4566/000000000000/unused", // appends never touch SQS
	}, faulty, sq)
	if err != nil {
		t.Fatal(err)
	}
	const run = "hot"
	for attempt := 0; ; attempt++ { // creation may be throttled or lose its response too
		_, err := w.Append(ctx, run, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.Ledger"})
		if err == nil || errors.Is(err, worlds.ErrRunExists) {
			break
		}
		if attempt > 40 {
			t.Fatalf("seed %d: create: %v", s, err)
		}
	}
	const writers, each = 6, 6
	var wg sync.WaitGroup
	failures := make(chan error, writers)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf("g%d-%02d", g, i)
				for attempt := 0; ; attempt++ {
					_, err := w.Append(ctx, run, worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{key: "x"}})
					if err == nil {
						break
					}
					r, gerr := w.GetRun(ctx, run)
					if gerr == nil && r.Attributes[key] != "" {
						break // committed; only the response was lost
					}
					if attempt > 40 {
						failures <- fmt.Errorf("writer %d event %d: %w", g, i, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Fatalf("seed %d: %v", s, err)
	}
	events, err := worlds.AllEvents(ctx, w, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1+writers*each {
		t.Fatalf("seed %d: %d events, want %d", s, len(events), 1+writers*each)
	}
	next := map[string]int{}
	for i, ev := range events {
		if ev.Seq != int64(i+1) {
			t.Fatalf("seed %d: event %d has seq %d", s, i, ev.Seq)
		}
		for k := range ev.Attributes {
			var g, n int
			fmt.Sscanf(k, "g%d-%d", &g, &n)
			if n != next[fmt.Sprint(g)] {
				t.Fatalf("seed %d: writer %d: event %d out of order or repeated (want %d)", s, g, n, next[fmt.Sprint(g)])
			}
			next[fmt.Sprint(g)]++
		}
	}
	t.Logf("transactions sent=%d throttled=%d responses lost=%d events=%d lost=0 duplicated=0",
		faulty.sent.Load(), f.count("ddb-throttle-write"), f.count("ddb-lost-write"), len(events))
	if f.count("ddb-throttle-write") == 0 || f.count("ddb-lost-write") == 0 {
		t.Fatalf("seed %d: a fault kind was never injected; rerun proves nothing", s)
	}
}
