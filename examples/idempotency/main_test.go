package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cairn-go/cairn/idempotency"
	"github.com/cairn-go/cairn/idempotency/memory"
)

// TestBuildsWithoutCgo guards the deployment contract: the example links statically.
func TestBuildsWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.Command(gobin, "build", "-o", filepath.Join(t.TempDir(), "bootstrap"), ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
}

func TestHandlerReplays(t *testing.T) {
	t.Parallel()
	m, err := idempotency.New(memory.New(), idempotency.Options{
		KeyPrefix: "process-order", EventKeyJMESPath: "id", PayloadValidationJMESPath: "amount", ThrowOnNoKey: true,
		LookupEnv: func(string) (string, bool) { return "", false },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := idempotency.WrapHandler(m, processOrder)
	got, err := h(context.Background(), Order{ID: "ORD-123", Amount: 42})
	if err != nil || got.OrderID != "ORD-123" {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := h(context.Background(), Order{Amount: 42}); err == nil {
		t.Fatal("missing id accepted with ThrowOnNoKey")
	}
}
