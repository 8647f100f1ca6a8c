package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/cairn-go/cairn/durable"
	"github.com/cairn-go/cairn/durable/durabletest"
)

// callbacks creates n callbacks named cb-0…, then records their IDs in a step,
// the way a function hands them to the systems that will answer.
func callbacks(dc *durable.Context, n int, ids *[]string) ([]*durable.Callback[string], error) {
	cbs := make([]*durable.Callback[string], n)
	for i := range cbs {
		cb, err := durable.CreateCallback[string](dc, fmt.Sprintf("cb-%d", i), durable.CallbackOptions{Timeout: time.Hour})
		if err != nil {
			return nil, err
		}
		cbs[i] = cb
	}
	_, err := durable.Step(dc, "send", func(context.Context) (int, error) {
		*ids = (*ids)[:0]
		for _, cb := range cbs {
			*ids = append(*ids, cb.ID())
		}
		return n, nil
	})
	return cbs, err
}

func futures(cbs []*durable.Callback[string]) []durable.Future {
	fs := make([]durable.Future, len(cbs))
	for i, cb := range cbs {
		fs[i] = cb
	}
	return fs
}

// TestRace (7.3): Race suspends until a future settles, returns the first, and
// checkpoints its decision as a CONTEXT operation (subtype RunInChildContext,
// as the official SDKs record combinators), so a replay returns the same
// winner after the loser has settled too.
func TestRace(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		log := &updateLog{API: e.API(), ops: map[string]string{}}
		var ids []string
		var decided []int
		h := newHandlerAPI(t, e, log, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			cbs, err := callbacks(dc, 3, &ids)
			if err != nil {
				return nil, err
			}
			i, err := durable.Race(dc, "first", futures(cbs)...)
			decided = append(decided, i)
			if err != nil {
				return nil, err
			}
			v, err := cbs[i].Result()
			if err != nil {
				return nil, err
			}
			// Hold the execution open so that the decision is replayed later.
			gate, err := durable.CreateCallback[string](dc, "gate", durable.CallbackOptions{})
			if err != nil {
				return nil, err
			}
			ids = append(ids, gate.ID())
			if _, err := gate.Result(); err != nil {
				return nil, err
			}
			return fmt.Sprintf("%d %s", i, v), nil
		}, durable.Options{})
		ctx := context.Background()
		if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending || len(decided) != 0 {
			t.Fatalf("before any answer: %+v %v, decided %v", out, err, decided)
		}
		if err := e.CompleteCallback(ctx, ids[1], `"B"`); err != nil {
			t.Fatal(err)
		}
		if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("after the first answer: %+v %v", out, err)
		}
		gate := ids[3]
		if err := e.FailCallback(ctx, ids[0], "no"); err != nil {
			t.Fatal(err)
		}
		if err := e.CompleteCallback(ctx, ids[2], `"C"`); err != nil {
			t.Fatal(err)
		}
		if err := e.CompleteCallback(ctx, gate, `"go"`); err != nil {
			t.Fatal(err)
		}
		out, err := e.Drive(ctx, h, 3)
		if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != `"1 B"` {
			t.Fatalf("%+v %v", out, err)
		}
		if fmt.Sprint(decided) != "[1 1]" {
			t.Errorf("Race returned %v over the invocations, want [1 1]", decided)
		}
		var updates []string
		log.mu.Lock()
		for _, u := range log.all {
			if aws.ToString(u.Name) == "first" {
				updates = append(updates, fmt.Sprintf("%s %s %s", u.Type, aws.ToString(u.SubType), u.Action))
			}
		}
		log.mu.Unlock()
		if got := strings.Join(updates, ", "); got != "CONTEXT RunInChildContext START, CONTEXT RunInChildContext SUCCEED" {
			t.Errorf("combinator checkpoints: %s", got)
		}
	})
}

// TestCombinators (7.3): All fails fast and otherwise waits for every future;
// Any returns the first success or ErrAllFailed; AllSettled waits for every
// outcome; "first" is the earliest recorded end, ties to the earlier argument.
func TestCombinators(t *testing.T) {
	t.Parallel()
	type answer struct {
		cb   int
		fail bool
	}
	for _, tt := range []struct {
		name    string
		answers []answer // sent before the invocation that decides
		apart   bool     // let time pass between answers, so their end times differ
		tie     bool     // answers at the same instant: the fake's clock only
		comb    func(dc *durable.Context, fs []durable.Future) (string, error)
		want    string
	}{
		{"all succeed", []answer{{0, false}, {1, false}, {2, false}}, false, false, all, "nil"},
		{"all fails fast", []answer{{1, true}}, false, false, all, "cb-1 failed"},
		{"all: earliest failure", []answer{{2, true}, {0, true}}, true, false, all, "cb-2 failed"},
		{"any: first success", []answer{{0, true}, {2, false}}, false, false, anyOf, "2"},
		{"any: all failed", []answer{{0, true}, {1, true}, {2, true}}, false, false, anyOf, "all failed: 3 errors"},
		{"race: earliest end", []answer{{2, false}, {1, false}}, true, false, race, "2 <nil>"},
		{"race: tie to the earlier argument", []answer{{2, false}, {1, false}}, false, true, race, "1 <nil>"},
		{"race: a failure wins too", []answer{{0, true}}, false, false, race, "0 cb-0 failed"},
		{"all settled", []answer{{0, false}, {1, true}, {2, false}}, false, false, allSettled, "[nil cb-1 failed nil]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
				if tt.tie && b.Real {
					t.Skip("the checkpoint server's clock does not stand still between two answers")
				}
				e := b.New(t, json.RawMessage(`{}`), nil)
				var ids []string
				h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
					cbs, err := callbacks(dc, 3, &ids)
					if err != nil {
						return nil, err
					}
					return tt.comb(dc, futures(cbs))
				}, durable.Options{})
				ctx := context.Background()
				if out, err := e.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
					t.Fatalf("before any answer: %+v %v", out, err)
				}
				for k, a := range tt.answers {
					if k > 0 && tt.apart {
						e.Elapse(1100 * time.Millisecond)
						if b.Real {
							// The server stamps an answer with its own clock, to the
							// millisecond: two answers in one millisecond tie.
							time.Sleep(5 * time.Millisecond)
						}
					}
					var err error
					if a.fail {
						err = e.FailCallback(ctx, ids[a.cb], fmt.Sprintf("cb-%d failed", a.cb))
					} else {
						err = e.CompleteCallback(ctx, ids[a.cb], fmt.Sprintf(`"v%d"`, a.cb))
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				out, err := e.Drive(ctx, h, 3)
				if err != nil || out.Status != durable.StatusSucceeded {
					t.Fatalf("%+v %v", out, err)
				}
				var got string
				if err := json.Unmarshal([]byte(aws.ToString(out.Result)), &got); err != nil || got != tt.want {
					t.Errorf("got %s, want %q", aws.ToString(out.Result), tt.want)
				}
			})
		})
	}
}

// describe reports an error by the callback failure message it carries.
func describe(err error) string {
	if err == nil {
		return "nil"
	}
	var oe *durable.OperationError
	if errors.As(err, &oe) {
		return oe.Message
	}
	return err.Error()
}

func all(dc *durable.Context, fs []durable.Future) (string, error) {
	return describe(durable.All(dc, "all", fs...)), nil
}

func anyOf(dc *durable.Context, fs []durable.Future) (string, error) {
	i, err := durable.Any(dc, "any", fs...)
	if errors.Is(err, durable.ErrAllFailed) {
		return fmt.Sprintf("all failed: %d errors", len(err.(interface{ Unwrap() []error }).Unwrap())-1), nil
	}
	return fmt.Sprint(i), err
}

func race(dc *durable.Context, fs []durable.Future) (string, error) {
	i, err := durable.Race(dc, "race", fs...)
	if err != nil {
		return fmt.Sprintf("%d %s", i, describe(err)), nil
	}
	return fmt.Sprintf("%d <nil>", i), nil
}

func allSettled(dc *durable.Context, fs []durable.Future) (string, error) {
	errs, err := durable.AllSettled(dc, "settled", fs...)
	if err != nil {
		return "", err
	}
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = describe(e)
	}
	return "[" + strings.Join(out, " ") + "]", nil
}

// TestRaceCallbackAgainstWait: the usual deadline pattern. When the wait
// elapses first it wins; when the answer comes first it wins and cancelling
// the wait ends it CANCELLED, so the service does not reinvoke for it.
func TestRaceCallbackAgainstWait(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		for _, answer := range []bool{false, true} {
			if answer && b.Real {
				t.Log("answer first: fake only: the checkpoint-server driver fires every started wait after each invocation")
				continue
			}
			e := b.New(t, json.RawMessage(`{}`), nil)
			var ids []string
			var waitID string
			h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
				cbs, err := callbacks(dc, 1, &ids)
				if err != nil {
					return nil, err
				}
				deadline, err := dc.StartWait("deadline", 2*time.Second)
				if err != nil {
					return nil, err
				}
				i, err := durable.Race(dc, "answer-or-deadline", cbs[0], deadline)
				if err != nil {
					return nil, err
				}
				if i == 1 {
					return "escalated", nil
				}
				if err := deadline.Cancel(); err != nil {
					return nil, err
				}
				return cbs[0].Result()
			}, durable.Options{})
			ctx := context.Background()
			if f := durabletest.Fake(e); f != nil {
				// One invocation by hand: Drive would move the clock to the wait.
				if out, err := h.Handle(ctx, f.Input()); err != nil || out.Status != durable.StatusPending {
					t.Fatalf("%+v %v", out, err)
				}
				if answer {
					if err := e.CompleteCallback(ctx, ids[0], `"approved"`); err != nil {
						t.Fatal(err)
					}
				}
			}
			out, err := e.Drive(ctx, h, 3)
			want := `"escalated"`
			if answer {
				want = `"approved"`
			}
			if err != nil || out.Status != durable.StatusSucceeded || aws.ToString(out.Result) != want {
				t.Fatalf("answer first %v: %+v %v", answer, out, err)
			}
			for _, op := range e.Operations(t) {
				if op.Type == types.OperationTypeWait {
					waitID = aws.ToString(op.Id)
					wantStatus := types.OperationStatusSucceeded
					if answer {
						wantStatus = types.OperationStatusCancelled
					}
					if op.Status != wantStatus {
						t.Errorf("answer first %v: deadline %s, want %s", answer, op.Status, wantStatus)
					}
				}
			}
			if waitID == "" {
				t.Errorf("answer first %v: no WAIT in state", answer)
			}
		}
	})
}

// TestCombinatorInput: misuse is a typed error, not a panic or a hang, and
// checkpoints nothing; code that later passes a different set of futures to a
// decided combinator fails as nondeterministic.
func TestCombinatorInput(t *testing.T) {
	t.Parallel()
	durabletest.Run(t, func(t *testing.T, b durabletest.Backend) {
		e := b.New(t, json.RawMessage(`{}`), nil)
		h := newHandler(t, e, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			var msgs []string
			if _, err := durable.Race(dc, "none"); errors.Is(err, durable.ErrInvalidInput) {
				msgs = append(msgs, "race")
			}
			if _, err := durable.Any(dc, "none"); errors.Is(err, durable.ErrInvalidInput) {
				msgs = append(msgs, "any")
			}
			if err := durable.All(dc, "nil", nil); errors.Is(err, durable.ErrInvalidInput) && strings.Contains(err.Error(), `"nil"`) {
				msgs = append(msgs, "nil")
			}
			if err := durable.All(dc, "empty"); err == nil {
				msgs = append(msgs, "empty all")
			}
			escaped, err := durable.RunInChildContext(dc, "child", func(ctx context.Context, c *durable.Context) (*durable.Wait, error) {
				w, err := c.StartWait("inner", time.Second)
				if err != nil {
					return nil, err
				}
				// Below the context that started it: allowed.
				if _, err := durable.Race(c, "inner-race", w); err != nil {
					return nil, err
				}
				return w, nil
			})
			if err != nil {
				return nil, err
			}
			if _, err := durable.Race(dc, "escaped", escaped); errors.Is(err, durable.ErrInvalidInput) {
				msgs = append(msgs, "escaped")
			}
			return strings.Join(msgs, ","), nil
		}, durable.Options{})
		out, err := e.Drive(context.Background(), h, 4)
		if err != nil || aws.ToString(out.Result) != `"race,any,nil,empty all,escaped"` {
			t.Fatalf("%+v %v", out, err)
		}

		g := b.New(t, json.RawMessage(`{}`), nil)
		var ids []string
		invocations := 0
		h = newHandler(t, g, func(ctx context.Context, dc *durable.Context, _ json.RawMessage) (any, error) {
			invocations++
			cbs, err := callbacks(dc, 2, &ids)
			if err != nil {
				return nil, err
			}
			fs := futures(cbs)
			if invocations > 2 {
				fs = fs[:1]
			}
			if _, err := durable.Race(dc, "first", fs...); err != nil {
				return nil, err
			}
			return nil, dc.Wait("after", time.Second)
		}, durable.Options{})
		ctx := context.Background()
		if out, err := g.Drive(ctx, h, 3); err != nil || out.Status != durable.StatusPending {
			t.Fatalf("%+v %v", out, err)
		}
		if err := g.CompleteCallback(ctx, ids[0], `"a"`); err != nil {
			t.Fatal(err)
		}
		g.Elapse(2 * time.Second) // the fake fires the wait once due
		out, err = g.Drive(ctx, h, 3)
		if err != nil || out.Status != durable.StatusFailed || aws.ToString(out.Error.ErrorType) != "durable.Nondeterministic" {
			t.Fatalf("%+v %v, want FAILED durable.Nondeterministic", out, err)
		}
	})
}
