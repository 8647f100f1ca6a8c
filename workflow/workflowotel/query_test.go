package workflowotel_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/cairn-go/cairn/workflow/workflowotel"
	"github.com/cairn-go/cairn/worlds"
)

// querier answers every query with its name.
type querier struct{ worlds.Runner }

func (querier) Workflows() []string { return []string{"q"} }

func (querier) Query(_ context.Context, _ worlds.World, _ worlds.Run, name string, _ json.RawMessage) (json.RawMessage, error) {
	return json.Marshal(name)
}

// The wrapped runner passes queries on, so a client serving it still answers them.
func TestRunnerForwardsQueries(t *testing.T) {
	t.Parallel()
	m, err := workflowotel.New(workflowotel.Options{TracerProvider: noop.NewTracerProvider()})
	if err != nil {
		t.Fatal(err)
	}
	q, ok := m.Runner(querier{}).(worlds.Querier)
	if !ok {
		t.Fatal("the wrapped runner is no worlds.Querier")
	}
	if out, err := q.Query(context.Background(), nil, worlds.Run{WorkflowName: "q"}, "stage", nil); err != nil || string(out) != `"stage"` {
		t.Fatalf("Query = %s, %v", out, err)
	}
	type plain struct{ worlds.Runner }
	if _, err := m.Runner(plain{}).(worlds.Querier).Query(context.Background(), nil, worlds.Run{WorkflowName: "q"}, "stage", nil); !errors.Is(err, worlds.ErrNoRunner) {
		t.Fatalf("Query through a runner without queries: %v", err)
	}
}
