package stepkey_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/idempotencytest"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/stepkey"
	"github.com/cairn-go/cairn/workflow/workflowotel"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// crashWorld loses every step_completed write of the first attempt of the step
// named crashStep: the step's side effect has happened, its completion is never
// persisted however often that process re-sends it, and the delivery fails as if
// the process had died at that instant.
type crashWorld struct {
	worlds.World
	crashStep    string
	crashed      atomic.Bool
	crashAttempt atomic.Int64
}

var errCrash = errors.New("injected crash before step_completed was persisted")

func (w *crashWorld) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	for _, ev := range events {
		if ev.Type != worlds.EventStepCompleted {
			continue
		}
		step, err := w.World.GetStep(ctx, runID, ev.CorrelationID)
		if err != nil || step.StepName != w.crashStep {
			continue
		}
		if w.crashed.CompareAndSwap(false, true) {
			w.crashAttempt.Store(int64(step.Attempt))
		}
		if int64(step.Attempt) == w.crashAttempt.Load() {
			return nil, errCrash
		}
	}
	return w.World.Append(ctx, runID, events...)
}

func (w *crashWorld) Serve(ctx context.Context, r worlds.Runner) error {
	return w.World.(worlds.Server).Serve(ctx, &viaWorld{inner: r, w: w})
}

// viaWorld makes the runtime write through the crashing wrapper rather than the
// World the worker hands it.
type viaWorld struct {
	inner worlds.Runner
	w     worlds.World
}

func (r *viaWorld) Workflows() []string { return r.inner.Workflows() }
func (r *viaWorld) Run(ctx context.Context, _ worlds.World, d worlds.Delivery) error {
	return r.inner.Run(ctx, r.w, d)
}

// psp stands for an external payment provider: every call is a real charge.
type psp struct{ charges atomic.Int32 }

type Checkout struct {
	log      *slog.Logger
	psp      *psp
	payments *idempotency.Manager // nil: no idempotency
	attempts *[]int
	mu       *sync.Mutex
}

func (Checkout) WorkflowName() string { return "checkout" }

func (c Checkout) Run(ctx workflow.Context, cents int) (string, error) {
	c.log.InfoContext(ctx, "checkout begins")
	reserve := func(ctx context.Context, item string) (string, error) {
		c.log.InfoContext(ctx, "reserving", "item", item)
		return item, nil
	}
	a := workflow.Go(ctx, "reserve-a", reserve, "a")
	b := workflow.Go(ctx, "reserve-b", reserve, "b")
	if _, err := a.Get(ctx); err != nil {
		return "", err
	}
	if _, err := b.Get(ctx); err != nil {
		return "", err
	}
	receipt, err := workflow.Step(ctx, "charge", func(ctx context.Context, cents int) (string, error) {
		info, _ := workflow.InfoFrom(ctx)
		c.mu.Lock()
		*c.attempts = append(*c.attempts, info.Attempt)
		c.mu.Unlock()
		c.log.InfoContext(ctx, "charging")
		charge := func(context.Context) (string, error) {
			n := c.psp.charges.Add(1)
			return "receipt-" + string(rune('0'+n)), nil
		}
		if c.payments == nil {
			return charge(ctx)
		}
		p, err := stepkey.Payload(ctx)
		if err != nil {
			return "", err
		}
		return idempotency.Execute(ctx, c.payments, p, charge)
	}, cents)
	if err != nil {
		return "", err
	}
	if err := workflow.Sleep(ctx, 5*time.Millisecond); err != nil {
		return "", err
	}
	c.log.InfoContext(ctx, "checkout done")
	return receipt, nil
}

func TestCrashAfterSideEffect(t *testing.T) {
	for _, withKey := range []bool{false, true} {
		name := "without idempotency"
		if withKey {
			name = "with step key and idempotency"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			local, err := local.Open(ctx, local.Config{Path: local.Memory})
			if err != nil {
				t.Fatal(err)
			}
			defer local.Close()
			world := &crashWorld{World: local, crashStep: "charge"}

			var logs bytes.Buffer
			var logMu sync.Mutex
			logger := slog.New(workflow.NewLogHandler(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil)))
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			defer tp.Shutdown(ctx)
			tracer, err := workflowotel.New(workflowotel.Options{TracerProvider: tp})
			if err != nil {
				t.Fatal(err)
			}
			var attempts []int
			wf := Checkout{log: logger, psp: &psp{}, attempts: &attempts, mu: &sync.Mutex{}}
			if withKey {
				wf.payments, err = idempotency.New(idempotencytest.NewMemoryStore(), idempotency.Options{KeyPrefix: "payments", Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
			}
			client, err := workflow.NewClient(workflow.Config{World: world, Observer: tracer})
			if err != nil {
				t.Fatal(err)
			}
			sctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- client.Serve(sctx, tracer.Runner(workflow.Use(wf))) }()
			stop := sync.OnceFunc(func() { cancel(); <-done })
			defer stop()

			run, err := workflow.Start(ctx, client, wf, 1999)
			if err != nil {
				t.Fatal(err)
			}
			rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
			defer rcancel()
			receipt, err := run.Result(rctx)
			if err != nil {
				t.Fatal(err)
			}
			stop()
			if !world.crashed.Load() {
				t.Fatal("the crash was never injected")
			}

			// The retry re-ran the step: two live attempts of "charge".
			if len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 {
				t.Errorf("charge attempts %v, want [1 2]", attempts)
			}
			wantCharges, wantReceipt := int32(2), "receipt-2"
			if withKey {
				// Same run ID + step ID on the retry: the stored result is replayed.
				wantCharges, wantReceipt = 1, "receipt-1"
			}
			if got := wf.psp.charges.Load(); got != wantCharges || receipt != wantReceipt {
				t.Errorf("PSP charged %d times, receipt %q; want %d and %q", got, receipt, wantCharges, wantReceipt)
			}

			// Logs: workflow code ran in several deliveries (start, each branch's
			// completion, the crash redelivery, the sleep), yet replay-aware logging
			// writes each workflow line once; step lines once per live attempt.
			logMu.Lock()
			out := logs.String()
			logMu.Unlock()
			counts := map[string]int{
				"checkout begins": 1, "item=a": 1, "item=b": 1, "msg=charging": 2, "checkout done": 1,
				"workflow.attempt=2": 1,
			}
			for line, want := range counts {
				if got := strings.Count(out, line); got != want {
					t.Errorf("%q appears %d times, want %d\n%s", line, got, want, out)
				}
			}

			// Spans: one per live attempt (the crashed attempt's span was started;
			// the process "died" before it could be finished normally).
			steps := map[string]int{}
			deliveries := 0
			for _, s := range rec.Started() {
				switch {
				case strings.HasPrefix(s.Name(), "workflow.step "):
					steps[strings.TrimPrefix(s.Name(), "workflow.step ")]++
				case strings.HasPrefix(s.Name(), "workflow.deliver "):
					deliveries++
				}
			}
			if steps["charge"] != 2 || steps["reserve-a"] != 1 || steps["reserve-b"] != 1 || len(steps) != 3 {
				t.Errorf("step spans %v, want charge:2 reserve-a:1 reserve-b:1", steps)
			}
			t.Logf("deliveries %d, step spans %v", deliveries, steps)
		})
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
