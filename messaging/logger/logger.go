// Package logger constructs the standard library *slog.Logger values the
// messaging packages use; there is no custom logger interface, so any
// *slog.Logger (including zap or zerolog bridges) works directly.
package logger

import (
	"log/slog"
	"os"
)

// New returns a leveled text logger writing to stdout.
func New() *slog.Logger { return slog.New(slog.NewTextHandler(os.Stdout, nil)) }

// NewNoOp returns a logger that discards everything.
func NewNoOp() *slog.Logger { return slog.New(slog.DiscardHandler) }
