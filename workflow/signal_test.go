package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// Collect waits for a hook named by its input, then reads the signals named
// "add" sent meanwhile: n with Receive, then one more with TryReceive. A payload
// that does not decode is reported in the output and skipped.
type Collect struct{}

type collectIn struct {
	Token string
	N     int
}

func (Collect) Run(ctx workflow.Context, in collectIn) (string, error) {
	ch := workflow.NewSignalChannel[string](ctx, "add")
	h, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: in.Token})
	if err != nil {
		return "", err
	}
	if _, err := h.Receive(ctx); err != nil {
		return "", err
	}
	var got []string
	for len(got) < in.N {
		v, err := ch.Receive(ctx)
		var pe *workflow.SignalPayloadError
		switch {
		case errors.As(err, &pe) && errors.Is(err, workflow.ErrSerialization):
			got = append(got, "bad@"+pe.Name)
			continue
		case err != nil:
			return "", err
		}
		got = append(got, v)
	}
	// Nothing more was sent before the hook's payload: TryReceive finds nothing.
	if v, ok, err := ch.TryReceive(ctx); err != nil || ok {
		return "", fmt.Errorf("TryReceive = %q, %t, %v; want nothing", v, ok, err)
	}
	return strings.Join(got, ","), nil
}

// testSignalsBuffered: signals sent before the code reads them, some before
// it creates its channel, wait in the log and are read in the order sent; a
// signal of another name is not read, and a payload of the wrong type is a
// typed error returned to the code, not a failed run.
func testSignalsBuffered(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Collect{}))
	ctx := context.Background()
	token := "collect-" + t.Name()
	run, err := workflow.Start(ctx, h.c, Collect{}, collectIn{Token: token, N: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name    string
		payload any
	}{{"add", "a"}, {"other", "x"}, {"add", "b"}, {"add", 42}, {"add", "c"}} {
		if err := workflow.Signal(ctx, h.c, run.ID(), s.name, s.payload); err != nil {
			t.Fatalf("Signal(%s, %v): %v", s.name, s.payload, err)
		}
	}
	waitForHook(t, w, token)
	if _, err := workflow.ResumeHook(ctx, h.c, token, "go"); err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(resultCtx(t)); err != nil || out != "a,b,bad@add,c" {
		t.Fatalf("Result = %q, %v; want a,b,bad@add,c", out, err)
	}
	// The run has ended: a signal is refused, naming why.
	err = workflow.Signal(ctx, h.c, run.ID(), "add", "late")
	if !errors.Is(err, workflow.ErrRunEnded) || !errors.Is(err, worlds.ErrRunFinished) {
		t.Fatalf("Signal to an ended run = %v, want ErrRunEnded", err)
	}
	if err := workflow.Signal(ctx, h.c, "no-such-run", "add", "x"); !errors.Is(err, workflow.ErrRunNotFound) {
		t.Fatalf("Signal to an unknown run = %v, want ErrRunNotFound", err)
	}
	if err := workflow.Signal(ctx, h.c, run.ID(), "", "x"); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Fatalf("Signal with no name = %v, want ErrInvalidArgument", err)
	}
}

// ApproveBySignal waits for an "approve" signal or a timeout, whichever comes first.
type ApproveBySignal struct{}

func (ApproveBySignal) Run(ctx workflow.Context, timeout time.Duration) (string, error) {
	ch := workflow.NewSignalChannel[string](ctx, "approve")
	i, err := workflow.Select(ctx, ch, workflow.NewTimer(ctx, timeout))
	if err != nil {
		return "", err
	}
	if i == 1 {
		return "timed out", nil
	}
	who, err := ch.Receive(ctx)
	return "approved by " + who, err
}

// testSignalSelect: a signal channel in Select wins over a pending timer, and
// the timer is cancelled; with no signal, the timer wins.
func testSignalSelect(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(ApproveBySignal{}))
	ctx := context.Background()
	run, err := workflow.Start(ctx, h.c, ApproveBySignal{}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, err := w.GetWait(ctx, run.ID(), "wait_1"); return err == nil })
	if err := workflow.Signal(ctx, h.c, run.ID(), "approve", "ana"); err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(resultCtx(t)); err != nil || out != "approved by ana" {
		t.Fatalf("Result = %q, %v", out, err)
	}
	if wait, err := w.GetWait(ctx, run.ID(), "wait_1"); err != nil || wait.Status != worlds.WaitCompleted {
		t.Fatalf("the losing timer = %+v, %v; want it completed", wait, err)
	}
	quick, err := workflow.Start(ctx, h.c, ApproveBySignal{}, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := quick.Result(resultCtx(t)); err != nil || out != "timed out" {
		t.Fatalf("Result without a signal = %q, %v", out, err)
	}
}

// Tally returns the first n "vote" signals, sorted.
type Tally struct{}

func (Tally) Run(ctx workflow.Context, n int) (string, error) {
	ch := workflow.NewSignalChannel[string](ctx, "vote")
	var got []string
	for range n {
		v, err := ch.Receive(ctx)
		if err != nil {
			return "", err
		}
		got = append(got, v)
	}
	slices.Sort(got)
	return strings.Join(got, ","), nil
}

// testSignalWithStart: concurrent SignalWithStart calls for one run ID make one
// run, which gets every signal; the signal of the call that creates the run is
// in its log before the run starts; a call for an ended run is refused.
func testSignalWithStart(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	h := serve(t, w, workflow.Config{}, workflow.Use(Tally{}))
	ctx := context.Background()
	id := "tally-" + strings.ReplaceAll(t.Name(), "/", "-")
	const callers = 4
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := workflow.SignalWithStart(ctx, h.c, Tally{}, callers, "vote", fmt.Sprint(i), workflow.WithRunID(id))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("SignalWithStart: %v", err)
		}
	}
	run := workflow.Attach[string](h.c, id)
	if out, err := run.Result(resultCtx(t)); err != nil || out != "0,1,2,3" {
		t.Fatalf("Result = %q, %v; want every vote", out, err)
	}
	evs, err := worlds.AllEvents(ctx, w, id)
	if err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, ev := range evs {
		if ev.Type == worlds.EventRunCreated {
			created++
		}
	}
	if created != 1 || evs[1].Type != worlds.EventSignalReceived {
		t.Fatalf("log %v: want one run_created followed by the first signal", evs)
	}
	if _, err := workflow.SignalWithStart(ctx, h.c, Tally{}, 1, "vote", "late", workflow.WithRunID(id)); !errors.Is(err, workflow.ErrRunEnded) {
		t.Fatalf("SignalWithStart of an ended run = %v, want ErrRunEnded", err)
	}
	if _, err := workflow.SignalWithStart(ctx, h.c, ApproveBySignal{}, time.Second, "vote", "x", workflow.WithRunID(id)); !errors.Is(err, worlds.ErrRunExists) {
		t.Fatalf("SignalWithStart of another workflow's run ID = %v, want ErrRunExists", err)
	}
}

// LongWait selects a signal against a timer longer than the World allows.
type LongWait struct{}

func (LongWait) Run(ctx workflow.Context, d time.Duration) (string, error) {
	ch := workflow.NewSignalChannel[string](ctx, "go")
	i, err := workflow.Select(ctx, ch, workflow.NewTimer(ctx, d))
	if err != nil {
		return "", err
	}
	return fmt.Sprint("index ", i), nil
}

// A refused timer in Select is an error, not a timeout: the code that treats
// index 1 as "timed out" would otherwise act at once on a timer that never ran.
func TestSelectRefusedTimer(t *testing.T) {
	t.Parallel()
	w, err := local.Open(context.Background(), local.Config{Path: local.Memory, MaxDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	h := serve(t, w, workflow.Config{}, workflow.Use(LongWait{}))
	run, err := workflow.Start(context.Background(), h.c, LongWait{}, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run.Result(resultCtx(t))
	if err == nil || !strings.Contains(err.Error(), "maximum delay") {
		t.Fatalf("Result = %q, %v; want the run failed with the timer's refusal", out, err)
	}
}
