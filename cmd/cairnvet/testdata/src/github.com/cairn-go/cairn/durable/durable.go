// Package durable is a stub of github.com/cairn-go/cairn/durable with the API
// shapes cairnvet looks at.
package durable

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"
)

type Func func(ctx context.Context, dc *Context, input json.RawMessage) (any, error)

type Context struct{ counter int }

func (dc *Context) Wait(name string, d time.Duration) error { return nil }

func (dc *Context) Replaying() bool { return false }

func (dc *Context) Logger() *slog.Logger { return slog.Default() }

func Step[T any](dc *Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	return StepWith(dc, name, StepOptions{}, fn)
}

type StepOptions struct{ MaxAttempts int }

func StepWith[T any](dc *Context, name string, so StepOptions, fn func(ctx context.Context) (T, error)) (T, error) {
	return fn(context.Background())
}

type CallbackOptions struct{ Timeout time.Duration }

func WaitForCallback[T any](dc *Context, name string, timeout time.Duration, submit func(ctx context.Context, callbackID string) error) (T, error) {
	return WaitForCallbackWith[T](dc, name, CallbackOptions{Timeout: timeout}, submit)
}

func WaitForCallbackWith[T any](dc *Context, name string, opts CallbackOptions, submit func(ctx context.Context, callbackID string) error) (T, error) {
	var zero T
	return zero, submit(context.Background(), "id")
}

func WaitForCondition[S any](dc *Context, name string, initial S, check func(ctx context.Context, state S) (S, bool, error), wait func(checks int) time.Duration) (S, error) {
	s, _, err := check(context.Background(), initial)
	return s, err
}

func RunInChildContext[T any](dc *Context, name string, fn func(ctx context.Context, child *Context) (T, error)) (T, error) {
	return fn(context.Background(), dc)
}

type BatchOptions struct{ MinSuccessful int }

type BatchResult[T any] struct{ Items []T }

type Branch[T any] func(ctx context.Context, dc *Context) (T, error)

func Parallel[T any](dc *Context, name string, branches []Branch[T], opts BatchOptions) (BatchResult[T], error) {
	return BatchResult[T]{}, nil
}

func Map[I, T any](dc *Context, name string, items []I, fn func(ctx context.Context, dc *Context, item I, index int) (T, error), opts BatchOptions) (BatchResult[T], error) {
	return BatchResult[T]{}, nil
}

func Invoke[T any](dc *Context, name, functionName string, input any) (T, error) {
	var zero T
	return zero, nil
}
