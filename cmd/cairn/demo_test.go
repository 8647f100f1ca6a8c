package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"demo"}, &out, &out); code != 0 {
		t.Fatalf("cairn demo exited %d:\n%s", code, &out)
	}
	got := out.String()
	for _, want := range []string{
		"order ord-1001 fulfilled: charge ch_ord-1001_24999, confirmed by Dana, tracking 1Zord-1001",
		"charge attempt 2: charged $249.99",
		"waiting 2s for the packing window",
		"shipped 2 box(es) packed by Dana",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "card processor timed out, retrying"); n != 1 {
		t.Fatalf("charge failed %d times, want exactly once:\n%s", n, got)
	}
}

// An order without an ID is rejected before a run exists, naming the field, at
// the Go API and for a start by name (RPC, web UI), instead of failing the run
// later with a hook token conflict.
func TestDemoOrderValidated(t *testing.T) {
	t.Parallel()
	v := workflow.Use(FulfilOrder{}).(worlds.InputValidator)
	err := v.ValidateInput("demo.FulfilOrder", json.RawMessage(`{"id":"","items":["tent"],"amountCents":100}`))
	var ie *worlds.InputError
	if !errors.As(err, &ie) || ie.Field != "id" {
		t.Fatalf("empty order ID: %v, want an InputError for field id", err)
	}
	if err := v.ValidateInput("demo.FulfilOrder", json.RawMessage(`{"id":"o1","items":["tent"],"amountCents":100}`)); err != nil {
		t.Fatalf("valid order: %v", err)
	}
	if a, b := warehouseToken("run_a"), warehouseToken("run_b"); a == b {
		t.Fatalf("two runs share the warehouse token %q", a)
	}
}
