// Package workflow is a stub of github.com/cairn-go/cairn/workflow with the API
// shapes cairnvet looks at.
package workflow

import (
	"context"
	"time"
)

type Context interface {
	context.Context
	execution()
}

type Workflow[I, O any] interface {
	Run(ctx Context, in I) (O, error)
}

type StepOption func()

type Future[O any] struct{ v O }

func (f *Future[O]) Get(ctx Context) (O, error) { return f.v, nil }

func Go[I, O any](ctx Context, name string, fn func(context.Context, I) (O, error), in I, opts ...StepOption) *Future[O] {
	return &Future[O]{}
}

func Step[I, O any](ctx Context, name string, fn func(context.Context, I) (O, error), in I, opts ...StepOption) (O, error) {
	return Go(ctx, name, fn, in, opts...).Get(ctx)
}

func Now(ctx Context) time.Time { return time.Time{} }

func Random(ctx Context) float64 { return 0 }

func Sleep(ctx Context, d time.Duration) error { return nil }

type Selectable interface{ ready() bool }

func (f *Future[O]) ready() bool { return true }

func Select(ctx Context, fs ...Selectable) (int, error) { return 0, nil }
