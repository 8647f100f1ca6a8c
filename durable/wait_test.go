package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// checkpointLog records every accepted checkpoint request and, per operation,
// the last status the service reported for it in a checkpoint response: the
// service's word on operations that GetDurableExecutionState no longer lists
// (the children of a finished context).
type checkpointLog struct {
	durable.API
	mu       sync.Mutex
	requests [][]types.OperationUpdate
	names    map[string]string // operation ID -> name
	status   map[string]types.OperationStatus
}

func newCheckpointLog(api durable.API) *checkpointLog {
	return &checkpointLog{API: api, names: map[string]string{}, status: map[string]types.OperationStatus{}}
}

func (l *checkpointLog) CheckpointDurableExecution(ctx context.Context, in *lambda.CheckpointDurableExecutionInput, opts ...func(*lambda.Options)) (*lambda.CheckpointDurableExecutionOutput, error) {
	out, err := l.API.CheckpointDurableExecution(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, in.Updates)
	for _, u := range in.Updates {
		if u.Name != nil {
			l.names[aws.ToString(u.Id)] = *u.Name
		}
	}
	if out.NewExecutionState != nil {
		for _, op := range out.NewExecutionState.Operations {
			l.status[aws.ToString(op.Id)] = op.Status
		}
	}
	return out, nil
}

// statusOf is the last reported status of the operation named name.
func (l *checkpointLog) statusOf(name string) types.OperationStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, n := range l.names {
		if n == name {
			return l.status[id]
		}
	}
	return ""
}

// updates returns the names of the updates of type typ with action, in order.
func (l *checkpointLog) updates(typ types.OperationType, action types.OperationAction) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, req := range l.requests {
		for _, u := range req {
			if u.Type == typ && u.Action == action {
				out = append(out, aws.ToString(u.Name))
			}
		}
	}
	return out
}

// TestWaitCancel: StartWait starts a wait without blocking; Cancel checkpoints
// CANCEL once for a STARTED wait and nothing for an elapsed or cancelled one;
// Wait then returns ErrWaitCancelled, live and on replay.
func TestWaitCancel(t *testing.T) {
	t.Parallel()
	cancelled := func(err error) string {
		var oe *durable.OperationError
		return fmt.Sprintf("cancelled=%t operationError=%t", errors.Is(err, durable.ErrWaitCancelled), errors.As(err, &oe))
	}
	tests := []struct {
		name        string
		fn          func(dc *durable.Context) (any, error)
		result      string // JSON result
		history     string
		cancels     int
		invocations int
		elapsed     time.Duration // on the fake's clock
	}{
		{
			name: "cancel a started wait, replayed",
			fn: func(dc *durable.Context) (any, error) {
				w, err := dc.StartWait("timeout", time.Hour)
				if err != nil {
					return nil, err
				}
				if _, err := durable.Step(dc, "work", func(context.Context) (int, error) { return 1, nil }); err != nil {
					return nil, err
				}
				if err := w.Cancel(); err != nil {
					return nil, err
				}
				werr := w.Wait()
				// A second invocation replays the cancel: it must not cancel again.
				if err := dc.Wait("pause", time.Second); err != nil {
					return nil, err
				}
				return cancelled(werr), nil
			},
			result:      `"cancelled=true operationError=true"`,
			history:     "timeout=WAIT:CANCELLED work=STEP:SUCCEEDED pause=WAIT:SUCCEEDED",
			cancels:     1,
			invocations: 2,
			elapsed:     time.Second,
		},
		{
			name: "cancel twice in one invocation",
			fn: func(dc *durable.Context) (any, error) {
				w, err := dc.StartWait("timeout", time.Hour)
				if err != nil {
					return nil, err
				}
				if err := errors.Join(w.Cancel(), w.Cancel()); err != nil {
					return nil, err
				}
				return cancelled(w.Wait()), nil
			},
			result:      `"cancelled=true operationError=true"`,
			history:     "timeout=WAIT:CANCELLED",
			cancels:     1,
			invocations: 1,
		},
		{
			name: "cancel an elapsed wait does nothing",
			fn: func(dc *durable.Context) (any, error) {
				w, err := dc.StartWait("short", time.Second)
				if err != nil {
					return nil, err
				}
				if err := w.Wait(); err != nil {
					return nil, err
				}
				if err := w.Cancel(); err != nil {
					return nil, err
				}
				return w.Wait() == nil, nil
			},
			result:      `true`,
			history:     "short=WAIT:SUCCEEDED",
			invocations: 2,
			elapsed:     time.Second,
		},
		{
			name: "cancel inside a child context",
			fn: func(dc *durable.Context) (any, error) {
				return durable.RunInChildContext(dc, "child", func(ctx context.Context, c *durable.Context) (string, error) {
					w, err := c.StartWait("timeout", time.Hour)
					if err != nil {
						return "", err
					}
					if err := w.Cancel(); err != nil {
						return "", err
					}
					return cancelled(w.Wait()), nil
				})
			},
			result:      `"cancelled=true operationError=true"`,
			history:     "child=CONTEXT:SUCCEEDED",
			cancels:     1,
			invocations: 1,
		},
	}
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, tt := range tests {
			e := b.New(t, json.RawMessage(`{}`), nil)
			start := e.Now()
			log := newCheckpointLog(e.API())
			h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				return tt.fn(dc)
			}, durable.Options{})
			out, err := e.Drive(context.Background(), h, 5)
			if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != tt.result {
				t.Errorf("%s: %+v %v, want SUCCEEDED %s", tt.name, out, err, tt.result)
				continue
			}
			if got := statuses(t, e); got != tt.history {
				t.Errorf("%s: history %s, want %s", tt.name, got, tt.history)
			}
			if got := log.updates(types.OperationTypeWait, types.OperationActionCancel); len(got) != tt.cancels {
				t.Errorf("%s: WAIT CANCEL updates %v, want %d", tt.name, got, tt.cancels)
			}
			if got := e.Invocations(); got != tt.invocations {
				t.Errorf("%s: %d invocations, want %d", tt.name, got, tt.invocations)
			}
			if !b.Real {
				if got := e.Now().Sub(start); got != tt.elapsed {
					t.Errorf("%s: clock advanced %s, want %s", tt.name, got, tt.elapsed)
				}
			}
		}
	})
}
