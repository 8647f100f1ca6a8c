package stepkey_test

import (
	"fmt"

	"github.com/cairn-go/cairn/workflow/stepkey"
)

func ExampleKey() {
	// Inside a step, use stepkey.Payload(ctx) with idempotency.Execute; the key
	// depends only on the run and the step, not on the attempt or the process.
	k, _ := stepkey.Key("wrun_01J9", "step_2")
	fmt.Println(k)
	// Output: cairn-step-v1:9:wrun_01J9:6:step_2
}
