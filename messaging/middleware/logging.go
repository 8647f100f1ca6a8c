package middleware

import (
	"context"
	"log/slog"
	"time"

	merrors "github.com/cairn-go/cairn/messaging/errors"
)

// Logging logs each message's receipt at Info and its outcome and duration
// at Info (success) or Error (failure), as loafer-awsx does. A nil log
// discards.
func Logging(log *slog.Logger) Middleware {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, msg Message) (err error) {
			start := time.Now()
			// Built once: the outcome record appends to it (LogAttrs copies
			// what it is given, so reusing the slice is safe).
			attrs := logAttrs(msg)
			log.LogAttrs(ctx, slog.LevelInfo, "message received", attrs...)
			returned := false
			defer func() {
				if !returned {
					// A panic on its way to an outer Recovery: logged as the
					// failure it will become.
					log.LogAttrs(ctx, slog.LevelError, "message processing failed",
						append(attrs, slog.Duration("duration", time.Since(start)), slog.Any("error", merrors.ErrPanic))...)
				}
			}()
			err = next(ctx, msg)
			returned = true
			attrs = append(attrs, slog.Duration("duration", time.Since(start)))
			if err != nil {
				log.LogAttrs(ctx, slog.LevelError, "message processing failed", append(attrs, slog.Any("error", err))...)
				return err
			}
			log.LogAttrs(ctx, slog.LevelInfo, "message processed", attrs...)
			return nil
		}
	}
}

// logAttrs names msg in a log record: its queue and its MessageId, or for a
// message that does not carry one (a test double) its Identifier. A nil msg
// gets no message_id.
func logAttrs(msg Message) []slog.Attr {
	attrs := make([]slog.Attr, 0, 4)
	attrs = append(attrs, slog.String("queue", QueueName(msg)))
	if msg == nil {
		return attrs
	}
	return append(attrs, slog.String("message_id", identity(msg)))
}

// identity is msg's MessageId, or for a message that does not carry one (a
// test double) its Identifier. msg must not be nil.
func identity(msg Message) string {
	if id := MessageID(msg); id != "" {
		return id
	}
	return msg.Identifier()
}
