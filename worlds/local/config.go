package local

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// Memory is the Path of a private in-memory database, for tests. It lives as long
// as the World and is not shared with other Worlds.
const Memory = ":memory:"

// Defaults applied by [Open] to zero Config fields.
const (
	DefaultWorkers      = 4
	DefaultPollInterval = time.Second
	DefaultLease        = time.Minute
	DefaultBusyTimeout  = 5 * time.Second
	DefaultMaxItemBytes = 16 << 20
)

// Config configures [Open]. Only Path is required.
type Config struct {
	// Path is the database file, created if missing, or [Memory].
	Path string
	// Clock returns the current time; nil uses time.Now. Event times, due times and
	// retention follow it; delivery leases use the wall clock.
	Clock func() time.Time
	// Logger receives delivery failures; nil discards them.
	Logger *slog.Logger
	// NewID generates delivery IDs; nil uses 128 random bits in hex.
	NewID func() string
	// Workers is how many deliveries [World.Serve] runs at once, eager starts'
	// included; zero uses DefaultWorkers. A delivery gives its worker back as
	// the append that ends its run commits, so what it does after that (telling
	// a parent, queueing a continuation) is not counted.
	Workers int
	// NoEagerStart turns eager starts off: [World.StartEager] then declines
	// every run, and each run's first delivery waits in the queue for a worker
	// like any other, one write later. By default a run started while this
	// process serves its workflow and has a worker free runs at once on it.
	NoEagerStart bool
	// PollInterval bounds how long idle workers sleep before looking for deliveries
	// another process queued into the same file; zero uses DefaultPollInterval.
	PollInterval time.Duration
	// Lease is how long a claimed delivery stays invisible to other workers; a
	// running delivery renews it, a crashed process's claims return after it.
	// Zero uses DefaultLease.
	Lease time.Duration
	// BusyTimeout is how long a write waits for another process's lock on the
	// file; zero uses DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Retention, when positive, deletes finished runs that long after they end.
	Retention time.Duration
	// MaxItemBytes bounds one stored event, projection or stream chunk; zero uses
	// DefaultMaxItemBytes, negative means unlimited.
	MaxItemBytes int
	// MaxStreamWrite bounds the chunks of one WriteStream call; zero means unlimited.
	MaxStreamWrite int
	// MaxDelay bounds how far ahead a delivery may be due; zero means unlimited.
	MaxDelay time.Duration
	// BaseURL is the public URL the World's RPC and webhook handlers are served
	// under, including the prefix (for worldhttp's default,
	// http://localhost:8080/v1/workflow). Optional: when set, hooks expose their
	// webhook URL <BaseURL>/webhooks/<token> ([World.WebhookURL], and through it
	// workflow's Hook.URL and the hook views of worldhttp).
	BaseURL string

	// wall is the wall clock delivery leases follow; nil uses time.Now. Tests
	// replace it to drive leases without waiting on real time.
	wall func() time.Time
}

func (c Config) withDefaults() (Config, error) {
	bad := func(field string, v any, reason string) error {
		return &worlds.ArgumentError{Field: "local.Config." + field, Value: v, Reason: reason}
	}
	if c.BaseURL != "" {
		if u, err := url.Parse(c.BaseURL); err != nil || u.Scheme == "" || u.Host == "" {
			return c, bad("BaseURL", c.BaseURL, "must be an absolute URL")
		}
		c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	}
	switch {
	case c.Path == "":
		return c, bad("Path", `""`, "required: a file path or local.Memory")
	case c.Workers < 0:
		return c, bad("Workers", c.Workers, "must not be negative")
	case c.PollInterval < 0:
		return c, bad("PollInterval", c.PollInterval, "must not be negative")
	case c.Lease < 0:
		return c, bad("Lease", c.Lease, "must not be negative")
	case c.Lease > 0 && c.Lease < 10*time.Millisecond:
		return c, bad("Lease", c.Lease, "must be at least 10ms")
	case c.BusyTimeout < 0:
		return c, bad("BusyTimeout", c.BusyTimeout, "must not be negative")
	case c.Retention < 0:
		return c, bad("Retention", c.Retention, "must not be negative")
	case c.MaxStreamWrite < 0:
		return c, bad("MaxStreamWrite", c.MaxStreamWrite, "must not be negative")
	case c.MaxDelay < 0:
		return c, bad("MaxDelay", c.MaxDelay, "must not be negative")
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.wall == nil {
		c.wall = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.NewID == nil {
		c.NewID = randomID
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	switch {
	case c.MaxItemBytes == 0:
		c.MaxItemBytes = DefaultMaxItemBytes
	case c.MaxItemBytes < 0:
		c.MaxItemBytes = 0
	}
	return c, nil
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
