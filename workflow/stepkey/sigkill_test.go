package stepkey_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/idempotency"
	idemddb "github.com/cairn-go/cairn/idempotency/dynamodb"
	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/stepkey"
	"github.com/cairn-go/cairn/worlds/local"
)

// KillCheckout charges in its only step; the worker process can be told to
// SIGKILL itself right after the charge, before the runtime appends step_completed.
type KillCheckout struct {
	payments        *idempotency.Manager // nil: charge without idempotency
	effects, tries  string
	killAfterEffect bool
}

func (KillCheckout) WorkflowName() string { return "kill-checkout" }

func (k KillCheckout) Run(ctx workflow.Context, cents int) (string, error) {
	return workflow.Step(ctx, "charge", func(ctx context.Context, cents int) (string, error) {
		info, _ := workflow.InfoFrom(ctx)
		appendLine(k.tries, fmt.Sprint(info.Attempt))
		charge := func(context.Context) (string, error) {
			appendLine(k.effects, fmt.Sprintf("charged %d", cents))
			return "receipt", nil
		}
		var out string
		var err error
		if k.payments == nil {
			out, err = charge(ctx)
		} else {
			p, perr := stepkey.Payload(ctx)
			if perr != nil {
				return "", perr
			}
			out, err = idempotency.Execute(ctx, k.payments, p, charge)
		}
		if k.killAfterEffect {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // the process dies here, for real
			time.Sleep(time.Minute)
		}
		return out, err
	}, cents)
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		panic(err)
	}
	_ = f.Sync()
}

func lines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
}

func openFileWorld(t testing.TB, path string) *local.World {
	w, err := local.Open(context.Background(), local.Config{Path: path, Lease: time.Second, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestSIGKILLAfterSideEffect runs the worker in a child process on a file-backed
// embedded World and kills it with SIGKILL between the charge and the step's
// recorded completion; a second worker process finishes the run. With the step
// key and a DynamoDB (Local) idempotency store the charge happens once.
func TestSIGKILLAfterSideEffect(t *testing.T) {
	if os.Getenv("STEPKEY_CHILD") != "" {
		t.Skip("child")
	}
	ddb := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "stepkey")
	if _, err := ddb.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: ddbtypes.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, ddb, table)

	for _, idempotent := range []bool{false, true} {
		t.Run(fmt.Sprintf("idempotent=%v", idempotent), func(t *testing.T) {
			dir := t.TempDir()
			db, effects, tries := filepath.Join(dir, "world.db"), filepath.Join(dir, "effects"), filepath.Join(dir, "tries")
			w := openFileWorld(t, db)
			client, err := workflow.NewClient(workflow.Config{World: w})
			if err != nil {
				t.Fatal(err)
			}
			run, err := workflow.Start(t.Context(), client, KillCheckout{}, 1999)
			if err != nil {
				t.Fatal(err)
			}
			w.Close()

			child := func(kill bool) error {
				cmd := exec.Command(os.Args[0], "-test.run=^TestSIGKILLWorker$", "-test.v")
				cmd.Env = append(os.Environ(), "STEPKEY_CHILD=1", "STEPKEY_DB="+db, "STEPKEY_EFFECTS="+effects, "STEPKEY_TRIES="+tries,
					"STEPKEY_RUN="+run.ID(), "STEPKEY_TABLE="+table, fmt.Sprintf("STEPKEY_KILL=%v", kill), fmt.Sprintf("STEPKEY_IDEMPOTENT=%v", idempotent))
				out, err := cmd.CombinedOutput()
				if err != nil && !kill {
					t.Logf("worker output:\n%s", out)
				}
				return err
			}
			err = child(true)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("first worker did not die by SIGKILL: %v", err)
			}
			if err := child(false); err != nil {
				t.Fatalf("second worker: %v", err)
			}
			if got := lines(t, tries); strings.Join(got, ",") != "1,2" {
				t.Errorf("step attempts %v, want [1 2]: the retry re-runs the step", got)
			}
			want := 2
			if idempotent {
				want = 1
			}
			if got := lines(t, effects); len(got) != want {
				t.Errorf("charges %v, want %d", got, want)
			}
		})
	}
}

// TestSIGKILLWorker is the worker process of TestSIGKILLAfterSideEffect.
func TestSIGKILLWorker(t *testing.T) {
	if os.Getenv("STEPKEY_CHILD") == "" {
		t.Skip("only run as a child of TestSIGKILLAfterSideEffect")
	}
	wf := KillCheckout{effects: os.Getenv("STEPKEY_EFFECTS"), tries: os.Getenv("STEPKEY_TRIES"), killAfterEffect: os.Getenv("STEPKEY_KILL") == "true"}
	if os.Getenv("STEPKEY_IDEMPOTENT") == "true" {
		store, err := idemddb.New(testenv.DynamoDB(t), idemddb.Options{TableName: os.Getenv("STEPKEY_TABLE")})
		if err != nil {
			t.Fatal(err)
		}
		wf.payments, err = idempotency.New(store, idempotency.Options{KeyPrefix: "payments-" + os.Getenv("STEPKEY_RUN"), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
	}
	w := openFileWorld(t, os.Getenv("STEPKEY_DB"))
	defer w.Close()
	client, err := workflow.NewClient(workflow.Config{World: w})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = client.Serve(ctx, workflow.Use(wf)) }()
	defer func() { cancel(); wg.Wait() }()
	rctx, rcancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer rcancel()
	out, err := workflow.Attach[string](client, os.Getenv("STEPKEY_RUN")).Result(rctx)
	if err != nil || out != "receipt" {
		t.Fatalf("run result %q, %v", out, err)
	}
}
