package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	merrors "github.com/cairn-go/cairn/messaging/errors"
)

// Recovery turns a handler panic into an error wrapping errors.ErrPanic and
// logs the stack at Error level. A nil log discards.
func Recovery(log *slog.Logger) Middleware {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, msg Message) (err error) {
			defer func() {
				if r := recover(); r != nil {
					log.LogAttrs(ctx, slog.LevelError, "panic recovered",
						append(logAttrs(msg), slog.Any("panic", r), slog.String("stack", string(debug.Stack())))...)
					err = merrors.Wrap(merrors.ErrPanic, fmt.Errorf("%v", r))
				}
			}()
			return next(ctx, msg)
		}
	}
}
