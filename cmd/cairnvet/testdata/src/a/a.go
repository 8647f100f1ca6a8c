package a

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand"
	randv2 "math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"b"

	"github.com/cairn-go/cairn/workflow"
)

type Order struct{ client *http.Client }

var _ workflow.Workflow[int, string] = Order{}

func (o Order) Run(ctx workflow.Context, n int) (string, error) {
	_ = time.Now()                        // want `time\.Now in workflow code returns a different time on each replay: use workflow\.Now$`
	_ = time.Since(time.Time{})           // want `time\.Since .*use workflow\.Now`
	time.Sleep(time.Second)               // want `time\.Sleep .*use workflow\.Sleep$`
	<-time.After(time.Second)             // want `time\.After .*workflow\.NewTimer with workflow\.Select` `channel receive`
	_ = rand.Intn(10)                     // want `math/rand\.Intn .*use workflow\.Random$`
	_ = rand.New(rand.NewSource(1)).Int() // want `math/rand\.New ` `math/rand\.NewSource` `\(\*math/rand\.Rand\)\.Int .*workflow\.Random`
	_ = randv2.IntN(3)                    // want `math/rand/v2\.IntN .*workflow\.Random`
	_, _ = crand.Read(nil)                // want `crypto/rand\.Read .*use workflow\.Random, or make the value in a step \(workflow\.Step\)`
	_, _ = os.ReadFile("x")               // want `os\.ReadFile in workflow code is I/O .*do I/O in a step \(workflow\.Step\)$`
	_ = os.Getenv("HOME")                 // want `os\.Getenv .*workflow\.Step`
	_, _ = http.Get("http://example.com") // want `net/http\.Get .*workflow\.Step`
	_, _ = o.client.Do(nil)               // want `\(\*net/http\.Client\)\.Do .*workflow\.Step`
	_, _ = net.Dial("tcp", "x")           // want `net\.Dial .*workflow\.Step`
	var r io.Reader
	_, _ = r.Read(nil)          // want `\(io\.Reader\)\.Read .*workflow\.Step`
	_, _ = io.ReadAll(r)        // want `io\.ReadAll .*workflow\.Step`
	_, _ = os.Stdout.Write(nil) // want `\(\*os\.File\)\.Write .*workflow\.Step`
	clock := time.Now           // want `time\.Now in workflow code`
	_ = clock

	// Pure functions of the I/O packages are fine.
	_ = os.IsNotExist(nil)
	_ = net.ParseIP("127.0.0.1").String()
	_ = http.StatusText(200)
	h := http.Header{}
	h.Set("k", "v")
	var perr *os.PathError
	_ = perr.Error()

	go func() {}() // want `go statement in workflow code: start parallel steps with workflow\.Go$`
	ch := make(chan int, 1)
	ch <- 1       // want `channel send in workflow code`
	<-ch          // want `channel receive in workflow code: wait for steps with Future\.Get \(workflow\.Go\) or workflow\.Select$`
	v, ok := <-ch // want `channel receive`
	_, _ = v, ok
	for range ch { // want `range over a channel in workflow code`
	}
	select { // want `select statement in workflow code: wait for the first of several futures with workflow\.Select$`
	case x := <-ch:
		_ = x
	case ch <- 2:
	default:
	}

	m := map[string]int{"a": 1}
	for k := range m { // want `range over a map in workflow code visits keys in a different order on each replay: sort the keys \(slices\.Sorted\(maps\.Keys\(m\)\)\)$`
		_ = k
	}
	for k := range maps.Keys(m) { // want `range over maps\.Keys in workflow code .*sort the keys`
		_ = k
	}
	for _, k := range slices.Sorted(maps.Keys(m)) { // sorted: deterministic
		_ = m[k]
	}
	for i := range []int{1, 2} {
		_ = i
	}
	d := 3 * time.Second // durations and time values are fine
	_ = workflow.Now(ctx).Add(d)
	_ = workflow.Random(ctx)

	// Steps are where I/O belongs: nothing in a step function is reported, whether a
	// literal, a named function or a method value, with or without type arguments.
	if _, err := workflow.Step(ctx, "charge", func(sctx context.Context, n int) (string, error) {
		_ = time.Now()
		go func() {}()
		for k := range m {
			_ = k
		}
		b, err := os.ReadFile("x")
		return string(b), err
	}, n); err != nil {
		return "", err
	}
	f := workflow.Go[int, string](ctx, "fetch", o.fetch, n)
	_, _ = workflow.Step(ctx, "mail", sendMail, "ada")
	_, _ = workflow.Select(ctx, f)

	// A literal of a step's shape is a step wherever it comes from, such as a factory.
	post := func(name string) func(context.Context, int) (int, error) {
		return func(ctx context.Context, v int) (int, error) {
			time.Sleep(time.Millisecond)
			_, err := os.Stdout.WriteString(name)
			return v, err
		}
	}
	_, _ = workflow.Step(ctx, "debit", post("debit"), n)
	// The arguments of a step factory are evaluated in workflow code.
	_, _ = workflow.Step(ctx, "credit", post(time.Now().String()), n) // want `time\.Now in workflow code`
	_, _ = workflow.Step(ctx, "settle", makeStep(), n)
	// Unless workflow code calls it itself.
	_, _ = func(ctx context.Context, v int) (int, error) {
		time.Sleep(0) // want `time\.Sleep in workflow code`
		return v, nil
	}(ctx, n)

	_ = b.Stamp() // another package: not followed
	o.prepare(ctx)
	return summarize(m), nil
}

// fetch is a step; it is only passed to workflow.Go, never called by workflow code.
func (o Order) fetch(ctx context.Context, n int) (string, error) {
	resp, err := o.client.Get("http://example.com")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// makeStep is reached from Run, but the literal it returns is a step.
func makeStep() func(context.Context, int) (int, error) {
	_ = time.Now() // want `time\.Now .*\(reached from Order\.Run\)$`
	return func(ctx context.Context, v int) (int, error) {
		_, err := os.ReadFile("x")
		return v, err
	}
}

func sendMail(ctx context.Context, to string) (bool, error) {
	_, err := net.Dial("tcp", "smtp:25")
	return err == nil, err
}

// prepare is workflow code: it takes a workflow.Context.
func (o *Order) prepare(ctx workflow.Context) {
	_ = time.Now() // want `time\.Now in workflow code returns a different time on each replay: use workflow\.Now$`
	o.audit()
}

// audit is reached from Run through prepare; the finding names the root.
func (o *Order) audit() {
	_ = time.Now() // want `time\.Now in workflow code .*use workflow\.Now \(reached from Order\.prepare\)$`
}

// summarize is a helper called from Run.
func summarize(m map[string]int) string {
	for k := range m { // want `range over a map .*\(reached from Order\.Run\)$`
		_ = k
	}
	return deeper()
}

func deeper() string {
	return time.Now().String() // want `time\.Now .*\(reached from Order\.Run\)$`
}

// Plain functions that workflow code never calls are not checked.
func notWorkflow() {
	_ = time.Now()
	go func() {}()
	_, _ = os.ReadFile("x")
	for k := range map[int]int{} {
		_ = k
	}
}

// Only called from non-workflow code: not checked either.
func onlyFromMain() { _ = time.Now() }

func main() {
	notWorkflow()
	onlyFromMain()
	// A workflow function literal is workflow code wherever it appears.
	run := func(ctx workflow.Context, n int) (int, error) {
		_ = time.Now() // want `time\.Now in workflow code`
		return tally(n), nil
	}
	_ = run
}

// Generic workflows are checked as well.
type Batch[T any] struct{}

func (Batch[T]) Run(ctx workflow.Context, in []T) (int, error) {
	_ = rand.Int() // want `math/rand\.Int .*workflow\.Random`
	return helperT[T](in), nil
}

func helperT[T any](in []T) int {
	time.Sleep(0) // want `time\.Sleep .*\(reached from Batch\.Run\)$`
	return len(in)
}

// A step-shaped function that workflow code calls directly runs in workflow code.
type Direct struct{}

func (Direct) Run(ctx workflow.Context, n int) (int, error) { return direct(ctx, n) }

func direct(ctx context.Context, n int) (int, error) {
	_ = time.Now() // want `time\.Now .*\(reached from Direct\.Run\)$`
	return n, nil
}

// Ranging over a type parameter whose constraint is a map or a channel counts too.
type Fanout[M ~map[string]int, C chan int | <-chan int] struct{}

func (Fanout[M, C]) Run(ctx workflow.Context, m M) (int, error) {
	for k := range m { // want `range over a map in workflow code`
		_ = k
	}
	var c C
	for range c { // not one core type: channels of different directions
	}
	return 0, nil
}

func ranges[S ~[]int, M map[int]int](ctx workflow.Context, s S, m M) {
	for range s {
	}
	for range m { // want `range over a map in workflow code`
	}
}

func tally(n int) int {
	_ = time.Now() // want `time\.Now .*\(reached from the workflow function literal at a\.go:\d+\)$`
	return n
}

// A step-shaped literal kept in a variable and then called by workflow code runs
// in workflow code, not as a step.
type Stamped struct{}

func (Stamped) Run(ctx workflow.Context, in string) (string, error) {
	stamp := func(_ context.Context, s string) (string, error) {
		return s + time.Now().String(), nil // want `time\.Now in workflow code returns a different time on each replay: use workflow\.Now$`
	}
	out, err := stamp(ctx, in)
	if err != nil {
		return "", err
	}
	var later func(context.Context, string) (string, error)
	later = func(_ context.Context, s string) (string, error) {
		return os.Getenv(s), nil // want `os\.Getenv in workflow code is I/O`
	}
	_, _ = later(ctx, in)
	// Passed to a step and never called: a step.
	tag := func(_ context.Context, s string) (string, error) { return time.Now().String(), nil }
	_, _ = workflow.Step(ctx, "tag", tag, in)
	// Called only from inside a step: it runs in the step.
	inner := func(_ context.Context, s string) (string, error) { return time.Now().String(), nil }
	_, _ = workflow.Step(ctx, "outer", func(c context.Context, s string) (string, error) { return inner(c, s) }, in)
	return out, nil
}

// Printing to stdout or through the std log package repeats on every replay.
type Printing struct{ l *log.Logger }

func (p Printing) Run(ctx workflow.Context, n int) (int, error) {
	fmt.Println("start")         // want `fmt\.Println in workflow code prints again on every replay: log with slog through workflow\.NewLogHandler, which drops records while the workflow replays$`
	fmt.Printf("%d\n", n)        // want `fmt\.Printf in workflow code .*workflow\.NewLogHandler`
	fmt.Fprintln(os.Stderr, "x") // want `fmt\.Fprintln in workflow code .*workflow\.NewLogHandler`
	log.Printf("n=%d", n)        // want `log\.Printf in workflow code .*workflow\.NewLogHandler`
	log.Fatal("x")               // want `log\.Fatal in workflow code .*workflow\.NewLogHandler`
	p.l.Println("x")             // want `\(\*log\.Logger\)\.Println in workflow code .*workflow\.NewLogHandler`
	report(n)
	// Formatting into a buffer or a string prints nothing.
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%d", n)
	_ = fmt.Sprintf("%d", n)
	// A step may print: it runs once per attempt.
	_, _ = workflow.Step(ctx, "print", func(_ context.Context, n int) (int, error) {
		fmt.Println(n)
		log.Print(n)
		return n, nil
	}, n)
	return n, nil
}

func report(n int) {
	log.Println(n) // want `log\.Println in workflow code .*\(reached from Printing\.Run\)$`
}
