package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// Order is the demo workflow's input.
type Order struct {
	ID       string   `json:"id"`
	Items    []string `json:"items"`
	AmountCt int      `json:"amountCents"`
}

// Validate rejects orders the workflow cannot fulfil, before a run is created.
func (o Order) Validate() error {
	switch {
	case o.ID == "":
		return &worlds.InputError{Field: "id", Reason: "required"}
	case len(o.ID) > 64:
		return &worlds.InputError{Field: "id", Reason: fmt.Sprintf("%d bytes, at most 64", len(o.ID))}
	case len(o.Items) == 0:
		return &worlds.InputError{Field: "items", Reason: "at least one item is required"}
	case o.AmountCt <= 0:
		return &worlds.InputError{Field: "amountCents", Reason: "must be positive"}
	}
	return nil
}

// warehouseToken is the hook token the warehouse confirms a run's order with. It
// names the run, whose ID is unique, so two orders never share a token, even with
// the same order ID.
func warehouseToken(runID string) string { return "warehouse-" + runID }

// Receipt is the demo workflow's output.
type Receipt struct {
	OrderID     string `json:"orderId"`
	ChargeID    string `json:"chargeId"`
	ConfirmedBy string `json:"confirmedBy"`
	Tracking    string `json:"tracking"`
}

// Confirmation is what the warehouse sends to the hook.
type Confirmation struct {
	Packer string `json:"packer"`
	Boxes  int    `json:"boxes"`
}

// FulfilOrder reserves stock, charges the card (the processor times out once, so
// the step retries), waits for the packing window, waits for the warehouse to
// confirm through a hook, and ships.
type FulfilOrder struct {
	// charges counts live attempts of the charge step, so the first one can fail.
	charges *chargeCounter
	packing time.Duration
}

type chargeCounter struct {
	mu sync.Mutex
	n  int
}

func (c *chargeCounter) next() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

// WorkflowName pins the recorded name.
func (FulfilOrder) WorkflowName() string { return "demo.FulfilOrder" }

func progress(ctx context.Context, format string, args ...any) error {
	return workflow.WriteStream(ctx, "progress", fmt.Appendf(nil, format, args...))
}

// Run implements workflow.Workflow.
func (w FulfilOrder) Run(ctx workflow.Context, o Order) (Receipt, error) {
	retry := workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: 300 * time.Millisecond})
	// cairn runs query RUN stage (or the run page's Query panel) reads it.
	stage := "reserving stock"
	if err := workflow.SetQueryHandler(ctx, "stage", func(struct{}) (string, error) { return stage, nil }); err != nil {
		return Receipt{}, err
	}
	if _, err := workflow.Step(ctx, "reserve stock", func(sctx context.Context, o Order) (int, error) {
		return len(o.Items), progress(sctx, "reserved %d items for %s", len(o.Items), o.ID)
	}, o, retry); err != nil {
		return Receipt{}, err
	}
	stage = "charging the card"
	chargeID, err := workflow.Step(ctx, "charge card", func(sctx context.Context, o Order) (string, error) {
		info, _ := workflow.InfoFrom(sctx)
		if w.charges.next() == 1 {
			_ = progress(sctx, "charge attempt %d: card processor timed out, retrying", info.Attempt)
			return "", errors.New("card processor timed out")
		}
		id := fmt.Sprintf("ch_%s_%d", o.ID, o.AmountCt)
		return id, progress(sctx, "charge attempt %d: charged $%d.%02d (%s)", info.Attempt, o.AmountCt/100, o.AmountCt%100, id)
	}, o, retry)
	if err != nil {
		return Receipt{}, err
	}
	if _, err := workflow.Step(ctx, "announce packing", func(sctx context.Context, d time.Duration) (bool, error) {
		return true, progress(sctx, "waiting %s for the packing window (durable timer)", d)
	}, w.packing); err != nil {
		return Receipt{}, err
	}
	stage = "waiting for the packing window"
	if err := workflow.Sleep(ctx, w.packing); err != nil {
		return Receipt{}, err
	}
	info, _ := workflow.InfoFrom(ctx)
	hook, err := workflow.CreateHook[Confirmation](ctx, workflow.HookOptions{
		Token: warehouseToken(info.RunID), Metadata: map[string]string{"purpose": "warehouse confirmation", "order": o.ID},
	})
	if err != nil {
		return Receipt{}, err
	}
	if _, err := workflow.Step(ctx, "request confirmation", func(sctx context.Context, token string) (bool, error) {
		return true, progress(sctx, "asked the warehouse to confirm with hook token %q", token)
	}, hook.Token); err != nil {
		return Receipt{}, err
	}
	stage = "waiting for the warehouse to confirm"
	conf, err := hook.Receive(ctx)
	if err != nil {
		return Receipt{}, err
	}
	stage = "shipping"
	tracking, err := workflow.Step(ctx, "ship", func(sctx context.Context, c Confirmation) (string, error) {
		t := "1Z" + o.ID
		return t, progress(sctx, "shipped %d box(es) packed by %s, tracking %s", c.Boxes, c.Packer, t)
	}, conf, retry)
	if err != nil {
		return Receipt{}, err
	}
	return Receipt{OrderID: o.ID, ChargeID: chargeID, ConfirmedBy: conf.Packer, Tracking: tracking}, nil
}

const demoUsage = `usage: cairn demo
  Runs one order through a durable workflow on a fresh embedded World in a
  temporary directory, printing its progress: a step that fails once and
  retries, a durable timer, a hook resumed from outside, a live stream.`

func demoCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, stop := noArgs("demo", demoUsage, args, stderr); stop {
		return code
	}
	if err := demo(ctx, stdout); err != nil {
		fmt.Fprintln(stderr, "cairn demo:", err)
		return exitError
	}
	return exitOK
}

// demo runs one order on a fresh embedded World in a temporary directory.
func demo(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "cairn-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	world, err := local.Open(ctx, local.Config{Path: filepath.Join(dir, "cairn.db")})
	if err != nil {
		return err
	}
	defer world.Close()
	return runDemo(ctx, out, world, 2*time.Second)
}

func runDemo(ctx context.Context, out io.Writer, world worlds.World, packing time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	start := time.Now()
	var outMu sync.Mutex // the stream reader and the hook resumer print concurrently
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(out, "[%5.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	client, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 50 * time.Millisecond})
	if err != nil {
		return err
	}
	wf := FulfilOrder{charges: &chargeCounter{}, packing: packing}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- client.Serve(serveCtx, workflow.Use(wf)) }()
	defer func() { stopServe(); <-served }()

	order := Order{ID: "ord-1001", Items: []string{"tent", "stove", "lantern"}, AmountCt: 24999}
	run, err := workflow.Start(ctx, client, wf, order)
	if err != nil {
		return err
	}
	say("started run %s for order %s", run.ID(), order.ID)

	streamed := make(chan error, 1)
	go func() {
		for chunk, err := range client.ReadStream(ctx, run.ID(), "progress") {
			if err != nil {
				streamed <- err
				return
			}
			say("%s", chunk.Data)
		}
		streamed <- nil
	}()

	// The warehouse confirms from outside the workflow once the hook exists.
	confirmed := make(chan error, 1)
	go func() {
		token := warehouseToken(run.ID())
		for {
			if _, err := world.GetHookByToken(ctx, token); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				confirmed <- ctx.Err()
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		time.Sleep(300 * time.Millisecond)
		say("warehouse confirms the packing (resuming hook from outside)")
		_, err := workflow.ResumeHook(ctx, client, token, Confirmation{Packer: "Dana", Boxes: 2})
		confirmed <- err
	}()

	receipt, err := run.Result(ctx)
	if err != nil {
		return err
	}
	if err := <-streamed; err != nil {
		return err
	}
	if err := <-confirmed; err != nil {
		return err
	}
	say("order %s fulfilled: charge %s, confirmed by %s, tracking %s", receipt.OrderID, receipt.ChargeID, receipt.ConfirmedBy, receipt.Tracking)
	return nil
}
