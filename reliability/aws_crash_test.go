package reliability_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// crashLease is the AWS World's delivery lease in the crash tests: a killed
// worker's deliveries are free again this soon (the queue's visibility timeout
// is as short).
const crashLease = 2 * time.Second

func crashAWSWorld(t *testing.T, table, url string) *awsworld.World {
	t.Helper()
	w, err := awsworld.New(awsworld.Config{
		BaseURL: "https://example.com/v1/workflow", TableName: table, QueueURL: url, Lease: crashLease,
	}, testenv.DynamoDB(t), testenv.SQS(t))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The child side of TestSIGKILLOnAWSWorld: four receivers of the queue named by
// CAIRN_AWS_CRASH_QUEUE run the Ledger workflow through the Lambda handler on the
// table CAIRN_AWS_CRASH_TABLE until the process is killed.
func TestAWSCrashWorker(t *testing.T) {
	table, url, arn := os.Getenv("CAIRN_AWS_CRASH_TABLE"), os.Getenv("CAIRN_AWS_CRASH_QUEUE"), os.Getenv("CAIRN_AWS_CRASH_ARN")
	if table == "" {
		t.Skip("child process of TestSIGKILLOnAWSWorld")
	}
	w := crashAWSWorld(t, table, url)
	c, err := workflow.NewClient(workflow.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	// Queue delays round up to whole seconds on SQS, so most of a run's time is
	// spent waiting; longer steps keep the kills landing in them.
	effects := openEffects(t)
	handler := awsworld.Queue(w, c.Runner(worlds.Runners(workflow.Use(Ledger{effects: effects, work: 400 * time.Millisecond}), workflow.Use(LongLedger{effects: effects}))))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sq := testenv.SQS(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { poll(ctx, sq, awsQueue{url: url, arn: arn}, handler, nil) })
	}
	wg.Wait()
}

// TestSIGKILLOnAWSWorld is TestSIGKILLLosesNothing on the AWS World: DynamoDB
// Local and an SQS queue in fauxqs, served by worker processes running the
// Lambda handler, SIGKILLed at seeded random moments. A killed worker's messages
// come back after the queue's visibility timeout and its claimed deliveries
// after their lease; every run must still finish, each step completed once.
func TestSIGKILLOnAWSWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	db, sq := testenv.DynamoDB(t), testenv.SQS(t)
	table := testenv.UniqueName(t, "crash")
	if err := awsworld.CreateTable(context.Background(), db, table); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, db, table)
	q := createTestQueue(t, sq, false)
	crashLoop(t, crashSetup{
		world: crashAWSWorld(t, table, q.url), runs: 20, kills: 5,
		effects: filepath.Join(t.TempDir(), "effects.txt"),
		worker:  "TestAWSCrashWorker",
		env:     []string{"CAIRN_AWS_CRASH_TABLE=" + table, "CAIRN_AWS_CRASH_QUEUE=" + q.url, "CAIRN_AWS_CRASH_ARN=" + q.arn},
		killAfter: func(rng *rand.Rand) time.Duration {
			return time.Duration(rng.IntN(800)) * time.Millisecond
		},
	})
}
