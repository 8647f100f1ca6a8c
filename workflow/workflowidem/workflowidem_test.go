package workflowidem_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/cairn-go/cairn/idempotency"
	idynamodb "github.com/cairn-go/cairn/idempotency/dynamodb"
	"github.com/cairn-go/cairn/idempotency/memory"
	iredis "github.com/cairn-go/cairn/idempotency/redis"
	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowidem"
	"github.com/cairn-go/cairn/worlds/local"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).reaper"))
}

// psp is a payment provider without idempotency keys: every call charges.
type psp struct{ calls atomic.Int32 }

func (p *psp) Charge(_ context.Context, cents int) (string, error) {
	return fmt.Sprintf("ch_%d_%d", p.calls.Add(1), cents), nil
}

// Checkout charges through workflowidem, then, on its first attempt, fails
// as a process that died after the charge and before the step's outcome was
// written: the runtime runs the step again.
type Checkout struct {
	m        *idempotency.Manager
	psp      *psp
	attempts *atomic.Int32
}

func (c Checkout) Run(ctx workflow.Context, cents int) (string, error) {
	return workflow.Step(ctx, "charge", func(sctx context.Context, cents int) (string, error) {
		id, err := workflowidem.Do(sctx, c.m, cents, c.psp.Charge)
		if err != nil {
			return "", err
		}
		if c.attempts.Add(1) == 1 {
			return "", errors.New("worker died before the step's outcome was recorded")
		}
		return id, nil
	}, cents, workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Millisecond}))
}

// stores are the idempotency stores the test runs on: memory always, DynamoDB
// Local and Redis when the test environment has them.
func stores(t *testing.T) map[string]func(*testing.T) idempotency.Store {
	return map[string]func(*testing.T) idempotency.Store{
		"memory": func(*testing.T) idempotency.Store { return memory.New() },
		"dynamodb": func(t *testing.T) idempotency.Store {
			// A client of its own, whose idle connections close with the test.
			hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
			t.Cleanup(hc.CloseIdleConnections)
			c := dynamodb.New(testenv.DynamoDB(t).Options(), func(o *dynamodb.Options) { o.HTTPClient = hc })
			name := testenv.UniqueName(t, "idem")
			if _, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
				TableName: aws.String(name), BillingMode: types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
			}); err != nil {
				t.Fatal(err)
			}
			testenv.DeleteTableOnCleanup(t, c, name)
			s, err := idynamodb.New(c, idynamodb.Options{TableName: name})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"redis": func(t *testing.T) idempotency.Store {
			c := goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(t)})
			t.Cleanup(func() { _ = c.Close() })
			s, err := iredis.New(c, iredis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

// A step retried after its call succeeded gets the recorded response: the
// provider is called once, and the run's output is the first charge's ID.
func TestRetriedStepDoesNotCallTwice(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := idempotency.New(open(t), idempotency.Options{
				KeyPrefix: testenv.UniqueName(t, "charge"), EventKeyJMESPath: "stepKey", PayloadValidationJMESPath: "input",
			})
			if err != nil {
				t.Fatal(err)
			}
			world, err := local.Open(context.Background(), local.Config{Path: local.Memory})
			if err != nil {
				t.Fatal(err)
			}
			defer world.Close()
			c, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			wf := Checkout{m: m, psp: &psp{}, attempts: &atomic.Int32{}}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = c.Serve(ctx, workflow.Use(wf)) }()
			defer func() { cancel(); <-done }()
			run, err := workflow.Start(context.Background(), c, wf, 1250)
			if err != nil {
				t.Fatal(err)
			}
			rctx, rcancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer rcancel()
			out, err := run.Result(rctx)
			if err != nil {
				t.Fatal(err)
			}
			if wf.attempts.Load() != 2 {
				t.Fatalf("%d attempts, want 2 (the test proves nothing otherwise)", wf.attempts.Load())
			}
			if out != "ch_1_1250" || wf.psp.calls.Load() != 1 {
				t.Fatalf("Result = %q after %d charges; want the first charge's ID, charged once", out, wf.psp.calls.Load())
			}
			// Another run of the same input is another step: it charges.
			run2, err := workflow.Start(context.Background(), c, wf, 1250)
			if err != nil {
				t.Fatal(err)
			}
			if out, err := run2.Result(rctx); err != nil || out != "ch_2_1250" {
				t.Fatalf("second run: %q, %v; want a charge of its own", out, err)
			}
		})
	}
}

// Outside a step, or without a manager, Do fails for good and calls nothing.
func TestDoOutsideAStep(t *testing.T) {
	t.Parallel()
	m, err := idempotency.New(memory.New(), idempotency.Options{KeyPrefix: "x"})
	if err != nil {
		t.Fatal(err)
	}
	p := &psp{}
	for name, mgr := range map[string]*idempotency.Manager{"no step": m, "no manager": nil} {
		_, err := workflowidem.Do(context.Background(), mgr, 1, p.Charge)
		if !workflow.IsFatal(err) || p.calls.Load() != 0 {
			t.Errorf("%s: %v after %d calls; want a fatal error and no call", name, err, p.calls.Load())
		}
	}
}
