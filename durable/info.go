package durable

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
)

// ErrNotInStep: the context is not a step's or callback submitter's.
var ErrNotInStep = errors.New("durable: context is not a durable step's")

// Info identifies the durable work a context belongs to. Each field is its own
// attribute: the execution ARN is not a request ID, and a resumed execution keeps
// its ARN while every invocation gets a new request ID from Lambda.
type Info struct {
	ExecutionArn  string
	OperationID   string // empty outside a step or callback submitter
	OperationName string
	Attempt       int // 1-based attempt of the step; 0 outside a step
	// Replaying is set on the function's root context when the invocation began
	// with history to replay.
	Replaying bool
}

type infoKey struct{}

func withInfo(ctx context.Context, info Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// InfoFrom returns the durable identity carried by ctx.
func InfoFrom(ctx context.Context) (Info, bool) {
	info, ok := ctx.Value(infoKey{}).(Info)
	return info, ok
}

// replayHandler drops records while the function replays and adds the operation
// identity of a step context to each record.
type replayHandler struct {
	inner slog.Handler
	x     *execution
	keep  bool // Options.LogReplays
	// rebuild marks the logger of contexts re-run to rebuild a result: always replaying.
	rebuild bool
}

func (h *replayHandler) replaying() bool { return h.rebuild || h.x.replaying.Load() }

func (h *replayHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return (h.keep || !h.replaying()) && h.inner.Enabled(ctx, l)
}

func (h *replayHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.replaying() {
		if !h.keep {
			return nil
		}
		r = r.Clone()
		r.AddAttrs(slog.Bool("durable.replaying", true))
	}
	if info, ok := InfoFrom(ctx); ok && info.OperationID != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("durable.operation_id", info.OperationID), slog.String("durable.operation_name", info.OperationName),
			slog.Int("durable.attempt", info.Attempt))
	}
	return h.inner.Handle(ctx, r)
}

func (h *replayHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &replayHandler{inner: h.inner.WithAttrs(attrs), x: h.x, keep: h.keep, rebuild: h.rebuild}
}

func (h *replayHandler) WithGroup(name string) slog.Handler {
	return &replayHandler{inner: h.inner.WithGroup(name), x: h.x, keep: h.keep, rebuild: h.rebuild}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

// IdempotencyKey derives a deterministic key for the step whose context ctx is,
// from the execution ARN and the operation ID: the same in every attempt and
// every invocation, never a request ID, clock or random value. Pass it to
// idempotency.Execute (as {"stepKey": key}) or to a downstream API that accepts
// idempotency keys, so a step re-run after a lost SUCCEED checkpoint does not
// repeat its side effect.
func IdempotencyKey(ctx context.Context) (string, error) {
	info, ok := InfoFrom(ctx)
	if !ok || info.OperationID == "" {
		return "", ErrNotInStep
	}
	return "cairn-durable-v1:" + strconv.Itoa(len(info.ExecutionArn)) + ":" + info.ExecutionArn + ":" + strconv.Itoa(len(info.OperationID)) + ":" + info.OperationID, nil
}
