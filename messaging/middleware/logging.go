package middleware

import (
	"context"
	"log/slog"
	"time"
)

// Logging logs each message's receipt at Debug and its outcome and duration
// at Info (success) or Error (failure). A nil log discards.
func Logging(log *slog.Logger) Middleware {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, msg Message) (err error) {
			start := time.Now()
			log.DebugContext(ctx, "message received",
				slog.String("queue", QueueName(msg)), slog.String("message_id", MessageID(msg)))
			returned := false
			defer func() {
				if !returned {
					// A panic on its way to an outer Recovery.
					log.LogAttrs(ctx, slog.LevelError, "message failed: handler panicked",
						slog.String("queue", QueueName(msg)), slog.String("message_id", MessageID(msg)),
						slog.Duration("duration", time.Since(start)))
				}
			}()
			err = next(ctx, msg)
			returned = true
			attrs := []slog.Attr{
				slog.String("queue", QueueName(msg)),
				slog.String("message_id", MessageID(msg)),
				slog.Duration("duration", time.Since(start)),
			}
			if err != nil {
				log.LogAttrs(ctx, slog.LevelError, "message failed", append(attrs, slog.Any("error", err))...)
				return err
			}
			log.LogAttrs(ctx, slog.LevelInfo, "message processed", attrs...)
			return nil
		}
	}
}
