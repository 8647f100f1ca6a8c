package worldtest

import (
	"context"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Option adjusts the suite to a World's test harness.
type Option func(*options)

type options struct {
	now       func() time.Time
	advance   func(time.Duration)
	retention time.Duration
	drive     func(ctx context.Context, w worlds.World, r worlds.Runner) error
	timeout   time.Duration
}

// WithClock gives the suite the World's clock: now reads it, advance moves it
// forward (nil when it cannot be moved). Without it the suite uses time.Now and
// waits in real time.
func WithClock(now func() time.Time, advance func(time.Duration)) Option {
	return func(o *options) { o.now, o.advance = now, advance }
}

// WithRetention tells the suite the retention the World was configured with, for
// the retention tests (which run when Capabilities.Retention is set). Without a
// clock that advances, retention must be short (at most 5 s) or those tests skip.
func WithRetention(d time.Duration) Option { return func(o *options) { o.retention = d } }

// WithDriver consumes a World's deliveries for Worlds that are not a
// [worlds.Server], running each with r until ctx ends (for example by polling the
// World's queue and calling its handler).
func WithDriver(drive func(ctx context.Context, w worlds.World, r worlds.Runner) error) Option {
	return func(o *options) { o.drive = drive }
}

// WithTimeout bounds how long the suite waits for a delivery or an expiry; the
// default is 20 s.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }
