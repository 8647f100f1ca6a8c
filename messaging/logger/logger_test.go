package logger_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/cairn-go/cairn/messaging/logger"
)

func TestLoggers(t *testing.T) {
	t.Parallel()
	if logger.NewNoOp().Enabled(context.Background(), slog.LevelError) {
		t.Fatal("no-op logger is enabled")
	}
	if !logger.New().Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("default logger drops info")
	}
}
