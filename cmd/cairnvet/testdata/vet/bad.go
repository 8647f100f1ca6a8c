// Package vet is a workflow with one finding of each kind, checked through go vet
// against the real workflow package.
package vet

import (
	"context"
	"os"
	"time"

	"github.com/cairn-go/cairn/workflow"
)

type Report struct{}

var _ workflow.Workflow[string, int] = Report{}

func (Report) Run(ctx workflow.Context, path string) (int, error) {
	size, err := workflow.Step(ctx, "stat", func(ctx context.Context, path string) (int, error) {
		fi, err := os.Stat(path)
		if err != nil {
			return 0, err
		}
		time.Sleep(time.Millisecond)
		return int(fi.Size()), nil
	}, path, workflow.WithMaxAttempts(2))
	if err != nil {
		return 0, err
	}
	f := workflow.Go(ctx, "count", count, path)
	n, err := f.Get(ctx)
	if err != nil {
		return 0, err
	}
	time.Sleep(time.Second)
	started := time.Now() //cairnvet:ignore logged only
	_ = started
	return size + n + weigh(map[string]int{"a": 1}), nil
}

func count(ctx context.Context, path string) (int, error) {
	b, err := os.ReadFile(path)
	return len(b), err
}

func weigh(m map[string]int) int {
	total := 0
	for k := range m {
		total += len(k)
	}
	go func() {}()
	return total
}
