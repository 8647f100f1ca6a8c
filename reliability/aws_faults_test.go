package reliability_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// TestAWSWorldUnderDynamoDBFaults appends from many writers to one hot run of
// the AWS World on DynamoDB Local while writes are throttled, commit with their
// response lost, or are sent again after committing (as the SDK does after a
// lost response). Attributes are appended as transactions, signals as one
// conditional put of the run view. A writer that gets an error checks whether
// its event landed (as a caller must after a lost response) and retries only if
// not. Every event must be in the log exactly once, in per-writer order, with
// contiguous sequence numbers.
func TestAWSWorldUnderDynamoDBFaults(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"attributes", "signals"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			hotRunUnderFaults(t, mode)
		})
	}
}

func hotRunUnderFaults(t *testing.T, mode string) {
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
	f := newFaults(s, map[string]float64{"ddb-throttle-write": 0.15, "ddb-lost-write": 0.15, "ddb-resent-write": 0.25})
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
	event := func(key string) worlds.Event {
		if mode == "signals" {
			return worlds.Event{Type: worlds.EventSignalReceived, CorrelationID: "ledger", Payload: json.RawMessage(strconv.Quote(key))}
		}
		return worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{key: "x"}}
	}
	keyOf := func(ev worlds.Event) string {
		if mode == "signals" {
			k, _ := strconv.Unquote(string(ev.Payload))
			return k
		}
		for k := range ev.Attributes {
			return k
		}
		return ""
	}
	landed := func(key string) bool {
		if mode == "attributes" {
			r, err := w.GetRun(ctx, run)
			return err == nil && r.Attributes[key] != ""
		}
		events, err := worlds.AllEvents(ctx, w, run)
		if err != nil {
			return false
		}
		for _, ev := range events {
			if keyOf(ev) == key {
				return true
			}
		}
		return false
	}
	const writers, each = 6, 6
	var wg sync.WaitGroup
	failures := make(chan error, writers)
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf("g%d-%02d", g, i)
				for attempt := 0; ; attempt++ {
					_, err := w.Append(ctx, run, event(key))
					if err == nil {
						break
					}
					if landed(key) {
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
		if i == 0 {
			continue
		}
		var g, n int
		fmt.Sscanf(keyOf(ev), "g%d-%d", &g, &n)
		if n != next[fmt.Sprint(g)] {
			t.Fatalf("seed %d: writer %d: event %d out of order or repeated (want %d)", s, g, n, next[fmt.Sprint(g)])
		}
		next[fmt.Sprint(g)]++
	}
	t.Logf("transactions=%d run view puts=%d throttled=%d responses lost=%d resent=%d events=%d lost=0 duplicated=0",
		faulty.sent.Load(), faulty.puts.Load(), f.count("ddb-throttle-write"), f.count("ddb-lost-write"), f.count("ddb-resent-write"), len(events))
	if f.count("ddb-throttle-write") == 0 || f.count("ddb-lost-write") == 0 || (mode == "signals" && f.count("ddb-resent-write") == 0) {
		t.Fatalf("seed %d: a fault kind was never injected; rerun proves nothing", s)
	}
	if (mode == "signals") != (faulty.sent.Load() == 0) {
		t.Fatalf("seed %d: %d transactions for %s", s, faulty.sent.Load(), mode)
	}
}
