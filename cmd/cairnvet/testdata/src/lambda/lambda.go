// Package lambda holds Lambda durable functions: code taking a *durable.Context
// is replayed from the top on every invocation.
package lambda

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"net/http"
	"os"
	"slices"
	"time"

	"b"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/workflow"
)

var _ durable.Func = Order

// Order is a durable.Func.
func Order(ctx context.Context, dc *durable.Context, in json.RawMessage) (any, error) {
	_ = time.Now()               // want `time\.Now in durable code returns a different time on each replay: do it in a durable\.Step$`
	_ = time.Until(time.Time{})  // want `time\.Until in durable code .*do it in a durable\.Step$`
	time.Sleep(time.Second)      // want `time\.Sleep in durable code blocks the invocation and does not survive a suspension: use dc\.Wait$`
	_ = time.NewTimer(time.Hour) // want `time\.NewTimer in durable code is not durable: use dc\.Wait$`
	_ = rand.Intn(10)            // want `math/rand\.Intn in durable code returns different values on each replay: do it in a durable\.Step$`
	_, _ = crand.Read(nil)       // want `crypto/rand\.Read in durable code .*do it in a durable\.Step$`
	_, _ = os.ReadFile("x")      // want `os\.ReadFile in durable code is I/O that replay repeats and no checkpoint records: do I/O in a durable\.Step$`
	_, _ = http.Get("http://x")  // want `net/http\.Get in durable code .*do I/O in a durable\.Step$`

	go func() {}() // want `go statement in durable code: run branches concurrently with durable\.Parallel or durable\.Map$`
	ch := make(chan int, 1)
	ch <- 1        // want `channel send in durable code: return results from durable\.Parallel or durable\.Map branches$`
	<-ch           // want `channel receive in durable code: collect results with durable\.Parallel or durable\.Map, or wait for an answer with durable\.WaitForCallback$`
	for range ch { // want `range over a channel in durable code`
	}
	select { // want `select statement in durable code: race branches with durable\.Parallel and BatchOptions\.MinSuccessful$`
	case <-ch:
	default:
	}
	lines := map[string]int{"a": 1}
	for sku := range lines { // want `range over a map in durable code visits keys in a different order on each replay: sort the keys \(slices\.Sorted\(maps\.Keys\(m\)\)\)$`
		_, _ = durable.Step(dc, sku, reserve)
	}
	for sku := range maps.Keys(lines) { // want `range over maps\.Keys in durable code`
		_ = sku
	}

	// What durable offers instead is fine, and so is logging through dc.Logger.
	for _, sku := range slices.Sorted(maps.Keys(lines)) {
		_, _ = durable.Step(dc, sku, reserve)
	}
	_ = dc.Wait("pause", time.Minute)
	dc.Logger().Info("ordered", "replaying", dc.Replaying())
	_ = 3 * time.Second

	// Step bodies are where the clock, randomness and I/O belong: nothing in them is
	// reported, for Step and StepWith, a WaitForCallback submitter and a
	// WaitForCondition check.
	id, err := durable.Step(dc, "new-id", func(ctx context.Context) (string, error) {
		time.Sleep(time.Millisecond)
		go func() {}()
		for k := range lines {
			_ = k
		}
		return time.Now().String() + string(rune(rand.Int())), nil
	})
	if err != nil {
		return nil, err
	}
	_, _ = durable.StepWith(dc, "read", durable.StepOptions{MaxAttempts: 2}, func(ctx context.Context) ([]byte, error) {
		return os.ReadFile("x")
	})
	_, _ = durable.WaitForCallback[string](dc, "approve", time.Hour, func(ctx context.Context, callbackID string) error {
		_, err := http.Post("http://mail", "text/plain", nil)
		_ = time.Now()
		return err
	})
	_, _ = durable.WaitForCallbackWith[string](dc, "approve2", durable.CallbackOptions{}, func(ctx context.Context, callbackID string) error {
		_, err := os.Stdout.WriteString(callbackID)
		return err
	})
	_, _ = durable.WaitForCondition(dc, "ready", 0, func(ctx context.Context, n int) (int, bool, error) {
		resp, err := http.Get("http://status")
		if err != nil {
			return n, false, err
		}
		return n + 1, resp.StatusCode == 200, nil
	}, nil)
	// A named step function is not called here, and a literal of a step's shape
	// is a step wherever it is written, such as a factory.
	_, _ = durable.Step(dc, "reserve", reserve)
	_, _ = durable.Step(dc, "stamp", stampStep("x"))
	// The arguments of a step factory are evaluated in durable code.
	_, _ = durable.Step(dc, "stamp2", stampStep(time.Now().String())) // want `time\.Now in durable code`
	// Unless durable code calls the literal itself.
	_, _ = func(ctx context.Context) (int, error) {
		time.Sleep(0) // want `time\.Sleep in durable code`
		return 0, nil
	}(ctx)

	_ = b.Stamp() // another package: not followed
	return id + summarize(lines), nil
}

func reserve(ctx context.Context) (int, error) {
	_, err := os.ReadFile("stock")
	return 0, err
}

// stampStep is reached from Order, but the literal it returns is a step.
func stampStep(s string) func(context.Context) (string, error) {
	_ = time.Now() // want `time\.Now in durable code .*\(reached from Order\)$`
	return func(ctx context.Context) (string, error) {
		return s + time.Now().String(), nil
	}
}

// summarize is a helper Order calls: durable code too.
func summarize(m map[string]int) string {
	for k := range m { // want `range over a map in durable code .*\(reached from Order\)$`
		_ = k
	}
	return deeper()
}

func deeper() string {
	return time.Now().String() // want `time\.Now in durable code returns a different time on each replay: do it in a durable\.Step \(reached from Order\)$`
}

// Child contexts, Parallel branches and Map functions take a *durable.Context:
// they are durable code, not steps, and steps inside them are steps.
func Fanout(ctx context.Context, dc *durable.Context, in json.RawMessage) (any, error) {
	_, _ = durable.RunInChildContext(dc, "child", func(ctx context.Context, child *durable.Context) (int, error) {
		_ = time.Now() // want `time\.Now in durable code`
		return durable.Step(child, "s", func(ctx context.Context) (int, error) {
			_ = time.Now()
			return 0, nil
		})
	})
	_, _ = durable.Parallel(dc, "p", []durable.Branch[int]{
		func(ctx context.Context, dc *durable.Context) (int, error) {
			return rand.Int(), nil // want `math/rand\.Int in durable code`
		},
		func(ctx context.Context, dc *durable.Context) (int, error) {
			return helper(), nil
		},
	}, durable.BatchOptions{})
	_, _ = durable.Map(dc, "m", []string{"a"}, func(ctx context.Context, dc *durable.Context, item string, i int) (int, error) {
		_, err := os.ReadFile(item) // want `os\.ReadFile in durable code`
		return i, err
	}, durable.BatchOptions{})
	return nil, nil
}

func helper() int {
	_ = time.Now() // want `time\.Now in durable code .*\(reached from the durable function literal at lambda\.go:\d+\)$`
	return 0
}

// branch is durable code by its parameter, even though no durable code calls it.
func branch(dc *durable.Context) int {
	_ = time.Now()        // want `time\.Now in durable code returns a different time on each replay: do it in a durable\.Step$`
	fmt.Println("branch") // want `fmt\.Println in durable code prints again on every replay: log with dc\.Logger\(\), which drops records while the function replays$`
	return tick()
}

func tick() int {
	time.Sleep(0) // want `time\.Sleep in durable code .*\(reached from branch\)$`
	return 0
}

// A *durable.Context in any position makes durable code, a method too.
type Ship struct{ client *http.Client }

func (s *Ship) Send(name string, dc *durable.Context) error {
	_, err := s.client.Get("http://ship/" + name) // want `\(\*net/http\.Client\)\.Get in durable code`
	return err
}

// A helper that both workflow code and durable code call is checked as each.
type Report struct{}

func (Report) Run(ctx workflow.Context, n int) (int, error) { return shared(n), nil }

func Tally(ctx context.Context, dc *durable.Context, in json.RawMessage) (any, error) {
	return shared(1), nil
}

func shared(n int) int {
	_ = time.Now() // want `time\.Now in workflow code .*use workflow\.Now \(reached from Report\.Run\)$` `time\.Now in durable code .*do it in a durable\.Step \(reached from Tally\)$`
	return n
}

// Plain functions that durable code never calls are not checked.
func main() {
	_ = time.Now()
	_ = tick
}
