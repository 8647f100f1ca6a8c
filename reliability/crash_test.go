package reliability_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// The child side of TestSIGKILLLosesNothing: it serves the Ledger workflow on the
// World file named by CAIRN_CRASH_DB until it is killed, appending one line per
// step execution to CAIRN_CRASH_EFFECTS.
func TestCrashWorker(t *testing.T) {
	db := os.Getenv("CAIRN_CRASH_DB")
	if db == "" {
		t.Skip("child process of TestSIGKILLLosesNothing")
	}
	f := openEffects(t)
	w, err := local.Open(context.Background(), local.Config{Path: db, Workers: 4, Lease: 500 * time.Millisecond, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := workflow.NewClient(workflow.Config{World: w, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = c.Serve(ctx, workflow.Use(Ledger{effects: f}), workflow.Use(LongLedger{effects: f}))
}

// openEffects opens the effects file a crash worker appends to.
func openEffects(t *testing.T) *os.File {
	f, err := os.OpenFile(os.Getenv("CAIRN_CRASH_EFFECTS"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Ledger posts three entries with a short sleep between; each step writes a line
// "<run>/<step>" to the effects file before it returns (O_APPEND, one write).
//
// work is how long each step takes (60ms when zero): the window a kill can land
// in while a step runs.
type Ledger struct {
	effects *os.File
	work    time.Duration
}

func (l Ledger) Run(ctx workflow.Context, n int) (int, error) {
	post := func(name string) func(context.Context, int) (int, error) {
		return func(ctx context.Context, v int) (int, error) {
			info, _ := workflow.InfoFrom(ctx)
			work := l.work
			if work == 0 {
				work = 60 * time.Millisecond
			}
			time.Sleep(work)
			if l.effects != nil {
				if _, err := fmt.Fprintf(l.effects, "%s/%s\n", info.RunID, name); err != nil {
					return 0, err
				}
			}
			return v + 1, nil
		}
	}
	v := n
	for _, name := range []string{"debit", "credit", "settle"} {
		var err error
		if v, err = workflow.Step(ctx, name, post(name), v, workflow.WithMaxAttempts(20)); err != nil {
			return 0, err
		}
		if err := workflow.Sleep(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return v, nil
}

// longSteps is how many steps a LongLedger run posts.
const longSteps = 50

// LongLedger posts longSteps entries in a row, each step writing
// "<run>/post-<i>" to the effects file as Ledger's do: one run long enough to
// be cut by several kills, handed between deliveries and workers on the way.
type LongLedger struct {
	effects *os.File
}

func (l LongLedger) Run(ctx workflow.Context, n int) (int, error) {
	v := n
	for i := range longSteps {
		name := fmt.Sprintf("post-%d", i)
		var err error
		v, err = workflow.Step(ctx, name, func(ctx context.Context, v int) (int, error) {
			info, _ := workflow.InfoFrom(ctx)
			time.Sleep(10 * time.Millisecond)
			if l.effects != nil {
				if _, err := fmt.Fprintf(l.effects, "%s/%s\n", info.RunID, name); err != nil {
					return 0, err
				}
			}
			return v + 1, nil
		}, v, workflow.WithMaxAttempts(20))
		if err != nil {
			return 0, err
		}
	}
	return v, nil
}

// TestSIGKILLLosesNothing starts runs on a file-backed embedded World, then
// repeatedly starts a worker process and SIGKILLs it at a seeded random moment.
// A last worker runs until every run is done. Every run must complete with the
// right output, and each step must be completed exactly once in its log; a step
// may have run more than once only where a kill interrupted it.
func TestSIGKILLLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	dir := t.TempDir()
	db, effects := filepath.Join(dir, "crash.db"), filepath.Join(dir, "effects.txt")
	w, err := local.Open(context.Background(), local.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	crashLoop(t, crashSetup{
		world: w, runs: 40, kills: 6, effects: effects,
		worker: "TestCrashWorker", env: []string{"CAIRN_CRASH_DB=" + db},
		killAfter: func(rng *rand.Rand) time.Duration { return time.Duration(rng.IntN(400)) * time.Millisecond },
	})
}

// effectsSize is the effects file's size, 0 when it does not exist yet.
func effectsSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// awaitEffect waits until the effects file grows past size (a step of the
// child ran), the child exits (done is left for the caller to read), or ctx
// ends.
func awaitEffect(ctx context.Context, path string, size int64, done chan error) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for effectsSize(path) <= size {
		select {
		case <-ctx.Done():
			return
		case err := <-done:
			done <- err // put the exit back for the caller (done has room for one)
			return
		case <-tick.C:
		}
	}
}

// crashSetup describes one SIGKILL loop: the World the runs live in, and the
// test function that serves it in a child process.
type crashSetup struct {
	world       worlds.World
	runs, kills int
	effects     string                         // the file each step execution appends a line to
	worker      string                         // the child's test function
	env         []string                       // the child's extra environment
	killAfter   func(*rand.Rand) time.Duration // from the child's first step effect to its SIGKILL
}

// crashLoop starts cs.runs Ledger runs and one LongLedger run of longSteps
// steps, kills cs.kills worker processes at
// seeded random moments, lets a last worker finish, and checks that nothing was
// lost: every run completed with the right output, each step completed once in
// a contiguous log, and steps re-executed only where a kill interrupted them.
func crashLoop(t *testing.T, cs crashSetup) {
	s := seed(t)
	t.Logf("CHAOS_SEED=%d", s)
	rng := rand.New(rand.NewPCG(s, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := cs.world
	c, err := workflow.NewClient(workflow.Config{World: w, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, cs.runs+1)
	steps := make([]int, cs.runs+1) // per run: the steps it posts
	for i := range cs.runs {
		r, err := workflow.Start(ctx, c, Ledger{}, i*10)
		if err != nil {
			t.Fatal(err)
		}
		ids[i], steps[i] = r.ID(), 3
	}
	long, err := workflow.Start(ctx, c, LongLedger{}, cs.runs*10)
	if err != nil {
		t.Fatal(err)
	}
	ids[cs.runs], steps[cs.runs] = long.ID(), longSteps
	command := func() *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+cs.worker+"$", "-test.count=1")
		cmd.Env = append(append(os.Environ(), "CAIRN_CRASH_EFFECTS="+cs.effects), cs.env...)
		return cmd
	}
	doneCount := func() int {
		n := 0
		for _, id := range ids {
			if r, err := w.GetRun(ctx, id); err == nil && r.Status.Terminal() {
				n++
			}
		}
		return n
	}
	interrupted := 0
	var progress []int
	for range cs.kills {
		cmd := command()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		// The kill is timed from the child's first step effect, not from its
		// start: how long a race-built test binary takes to start and open the
		// World varies with the machine's load, and a kill that lands before
		// any step ran proves nothing.
		awaitEffect(ctx, cs.effects, effectsSize(cs.effects), done)
		select {
		case <-time.After(cs.killAfter(rng)):
			_ = cmd.Process.Kill() // SIGKILL: no cleanup, no deferred code
			<-done
		case <-done:
		}
		after := doneCount()
		if after < len(ids) {
			interrupted++ // the kill landed while runs were unfinished
		}
		progress = append(progress, after)
	}
	t.Logf("runs finished after each kill: %v", progress)
	if interrupted == 0 {
		t.Fatalf("seed %d: no kill landed while work was in flight; the test proved nothing", s)
	}
	// The last worker is stopped once every run is done.
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for _, id := range ids {
			if _, err := c.Wait(ctx, id); err != nil {
				return
			}
		}
	}()
	last := command()
	if err := last.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-finished:
	case <-ctx.Done():
	}
	_ = last.Process.Kill()
	_ = last.Wait()

	reattempts := 0 // step attempts started again after a kill interrupted one
	for i, id := range ids {
		run, err := w.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != worlds.RunCompleted {
			dump(t, w, id)
			t.Fatalf("seed %d: run %s is %s after %d kills", s, id, run.Status, cs.kills)
		}
		if want := fmt.Sprint(i*10 + steps[i]); string(run.Output) != want {
			t.Fatalf("seed %d: run %s output %s, want %s", s, id, run.Output, want)
		}
		events, err := worlds.AllEvents(context.Background(), w, id)
		if err != nil {
			t.Fatal(err)
		}
		completed := map[string]int{}
		for j, ev := range events {
			if ev.Type == worlds.EventStepStarted && ev.Attempt > 1 {
				reattempts++
			}
			if ev.Seq != int64(j+1) {
				t.Fatalf("seed %d: run %s: log not contiguous at %d", s, id, j)
			}
			if ev.Type == worlds.EventStepCompleted {
				completed[ev.CorrelationID]++
			}
		}
		if len(completed) != steps[i] {
			t.Fatalf("seed %d: run %s: %d steps completed, want %d", s, id, len(completed), steps[i])
		}
		for step, n := range completed {
			if n != 1 {
				t.Fatalf("seed %d: run %s: %s completed %d times", s, id, step, n)
			}
		}
	}
	f, err := os.Open(cs.effects)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	execs := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		execs[strings.TrimSpace(sc.Text())]++
	}
	if want := cs.runs*3 + longSteps; len(execs) != want {
		t.Fatalf("seed %d: %d distinct step effects, want %d", s, len(execs), want)
	}
	repeated := 0
	for _, n := range execs {
		repeated += n - 1
	}
	t.Logf("runs=%d (and one of %d steps) kills=%d interrupting=%d lost=0 step effects=%d interrupted attempts re-run=%d effects repeated=%d",
		cs.runs, longSteps, cs.kills, interrupted, len(execs), reattempts, repeated)
	if reattempts == 0 {
		t.Fatalf("seed %d: no kill interrupted a running step; the test proved nothing", s)
	}
	if repeated > cs.kills*4 { // a kill interrupts at most the 4 steps its workers were running
		t.Fatalf("seed %d: %d repeated step executions for %d kills", s, repeated, cs.kills)
	}
}
