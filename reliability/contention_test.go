package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
	"github.com/cairn-go/cairn/worlds/local"
)

// commitCounter counts the AWS World's attempts to commit an append: each is one
// transaction or one conditional put of the run view (the other puts it makes
// write out what the run view held, unconditionally), so attempts beyond the
// appends are its optimistic-concurrency retries.
type commitCounter struct {
	awsworld.DynamoDBAPI
	n atomic.Int64
}

func (c *commitCounter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.n.Add(1)
	return c.DynamoDBAPI.TransactWriteItems(ctx, in, opts...)
}

func (c *commitCounter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if in.ConditionExpression != nil {
		c.n.Add(1)
	}
	return c.DynamoDBAPI.PutItem(ctx, in, opts...)
}

// hotWorld is a World under contention and, where it retries inside Append,
// the number of write attempts it has made.
type hotWorld struct {
	name     string
	worlds   []worlds.World // writers take turns over these (several Worlds on one store)
	attempts func() int64   // nil: Append never retries internally
}

func contentionWorlds(tb testing.TB) []hotWorld {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "hot.db")
	var locals []worlds.World
	for range 2 { // two Worlds on one file: two processes' worth of lock contention
		w, err := local.Open(ctx, local.Config{Path: path})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { w.Close() })
		locals = append(locals, w)
	}
	out := []hotWorld{{name: "local", worlds: locals}}

	db := testenv.DynamoDB(tb)
	table := testenv.UniqueName(tb, "hot")
	if err := awsworld.CreateTable(ctx, db, table); err != nil {
		tb.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(tb, db, table)
	counter := &commitCounter{DynamoDBAPI: db}
	aw, err := awsworld.New(awsworld.Config{BaseURL: "https://example.com/v1/workflow", TableName: table,
		QueueURL: "http://127.0.0.1:4566/000000000000/unused"}, counter, testenv.SQS(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return append(out, hotWorld{name: "aws", worlds: []worlds.World{aw}, attempts: counter.n.Load})
}

// hotLoad is the result of one contention run.
type hotLoad struct {
	appends, callerRetries, worldAttempts int64
	elapsed                               time.Duration
}

// retriesPerAppend counts every write attempt beyond one per append: all of
// them when the World counts its own attempts (those include the ones behind a
// caller's retry), else the caller's retries after ErrAppendContention.
func (l hotLoad) retriesPerAppend(internal bool) float64 {
	extra := l.callerRetries
	if internal {
		extra = l.worldAttempts - l.appends
	}
	return float64(extra) / float64(l.appends)
}

// runHotLoad has writers goroutines append perWriter events each, spread over
// hot runs, and checks that every event is in its run's log exactly once, in
// each writer's order, with contiguous sequence numbers.
func runHotLoad(tb testing.TB, hw hotWorld, prefix string, hot, writers, perWriter int) hotLoad {
	tb.Helper()
	ctx := context.Background()
	runs := make([]string, hot)
	for i := range runs {
		runs[i] = fmt.Sprintf("%s-%d", prefix, i)
		if _, err := hw.worlds[0].Append(ctx, runs[i], worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.Hot"}); err != nil {
			tb.Fatal(err)
		}
	}
	var before int64
	if hw.attempts != nil {
		before = hw.attempts()
	}
	var callerRetries atomic.Int64
	errs := make(chan error, writers)
	start := time.Now()
	var wg sync.WaitGroup
	for g := range writers {
		w := hw.worlds[g%len(hw.worlds)]
		wg.Go(func() {
			for i := range perWriter {
				run := runs[(g+i)%hot]
				ev := worlds.Event{Type: worlds.EventStepCreated, CorrelationID: fmt.Sprintf("g%03d-%05d", g, i), StepName: "s"}
				for {
					_, err := w.Append(ctx, run, ev)
					if err == nil {
						break
					}
					if !errors.Is(err, worlds.ErrAppendContention) {
						errs <- fmt.Errorf("writer %d append %d: %w", g, i, err)
						return
					}
					callerRetries.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	load := hotLoad{appends: int64(writers * perWriter), callerRetries: callerRetries.Load(), elapsed: elapsed}
	if hw.attempts != nil {
		load.worldAttempts = hw.attempts() - before
	}
	// Nothing lost, duplicated or reordered.
	seen := map[string]bool{}
	for _, run := range runs {
		events, err := worlds.AllEvents(ctx, hw.worlds[0], run)
		if err != nil {
			tb.Fatal(err)
		}
		last := map[int]int{}
		for j, ev := range events {
			if ev.Seq != int64(j+1) {
				tb.Fatalf("%s: run %s event %d has seq %d", hw.name, run, j, ev.Seq)
			}
			if ev.Type != worlds.EventStepCreated {
				continue
			}
			if seen[ev.CorrelationID] {
				tb.Fatalf("%s: event %s stored twice", hw.name, ev.CorrelationID)
			}
			seen[ev.CorrelationID] = true
			var g, i int
			fmt.Sscanf(ev.CorrelationID, "g%d-%d", &g, &i)
			if prev, ok := last[g]; ok && i <= prev {
				tb.Fatalf("%s: writer %d's event %d stored after its event %d", hw.name, g, i, prev)
			}
			last[g] = i
		}
	}
	if len(seen) != writers*perWriter {
		tb.Fatalf("%s: %d events stored, want %d", hw.name, len(seen), writers*perWriter)
	}
	return load
}

// TestHotRunContention has 16 writers append to 2 hot runs on each World and
// reports the retries per append and the throughput; every event must be stored
// once, in order.
func TestHotRunContention(t *testing.T) {
	t.Parallel()
	for _, hw := range contentionWorlds(t) {
		load := runHotLoad(t, hw, testenv.UniqueName(t, hw.name), 2, 16, 12)
		t.Logf("%s: %d appends by 16 writers to 2 runs in %v: %.0f appends/s, %.2f retries/append (caller retries %d)",
			hw.name, load.appends, load.elapsed.Round(time.Millisecond), float64(load.appends)/load.elapsed.Seconds(),
			load.retriesPerAppend(hw.attempts != nil), load.callerRetries)
	}
}

// BenchmarkHotRuns measures appends by many writers to a few hot runs: each
// benchmark operation is one append, spread over 16 writers. It reports
// retries/append (optimistic-concurrency retries inside the World plus caller
// retries after ErrAppendContention) and appends/s.
func BenchmarkHotRuns(b *testing.B) {
	for _, hw := range contentionWorlds(b) {
		for _, hot := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/hot=%d", hw.name, hot), func(b *testing.B) {
				const writers = 16
				per := max(1, b.N/writers)
				load := runHotLoad(b, hw, testenv.UniqueName(b, hw.name), hot, writers, per)
				b.ReportMetric(load.retriesPerAppend(hw.attempts != nil), "retries/append")
				b.ReportMetric(float64(load.appends)/load.elapsed.Seconds(), "appends/s")
			})
		}
	}
}
