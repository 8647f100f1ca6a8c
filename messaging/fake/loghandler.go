package fake

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"
)

var _ slog.Handler = (*LogHandler)(nil)

// LogRecord is one captured log entry. Attrs holds every attribute of the
// record and of the handler (WithAttrs), keyed by the group path joined with
// dots ("group.key"), valued by slog.Value.Any after resolving LogValuers.
type LogRecord struct {
	Time    time.Time
	Attrs   map[string]any
	Message string
	Level   slog.Level
}

// LogHandler is a slog.Handler that captures records, for tests asserting on
// what code logs through a *slog.Logger (slog.New(h)). Handlers derived with
// WithAttrs and WithGroup write to the same records as the handler they came
// from. It is safe for concurrent use.
type LogHandler struct {
	sink   *logSink
	attrs  map[string]any // from WithAttrs, already qualified
	groups []string
	level  slog.Level
}

type logSink struct {
	mu      sync.Mutex
	records []LogRecord
}

// NewLogHandler returns a LogHandler capturing slog.LevelDebug and above.
func NewLogHandler() *LogHandler {
	return &LogHandler{sink: &logSink{}, attrs: map[string]any{}, level: slog.LevelDebug}
}

// SetLevel sets the lowest level the handler captures and returns the handler.
func (h *LogHandler) SetLevel(level slog.Level) *LogHandler {
	h.level = level
	return h
}

// Enabled reports whether level is at or above the handler's level.
func (h *LogHandler) Enabled(_ context.Context, level slog.Level) bool { return level >= h.level }

// Handle captures r with the handler's attributes and groups applied.
func (h *LogHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := maps.Clone(h.attrs)
	if attrs == nil {
		attrs = map[string]any{}
	}
	r.Attrs(func(a slog.Attr) bool {
		flatten(attrs, h.groups, a)
		return true
	})
	h.sink.mu.Lock()
	h.sink.records = append(h.sink.records, LogRecord{Time: r.Time, Attrs: attrs, Message: r.Message, Level: r.Level})
	h.sink.mu.Unlock()
	return nil
}

// WithAttrs returns a handler that adds attrs, under the current groups, to
// every record.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	c := *h
	c.attrs = maps.Clone(h.attrs)
	if c.attrs == nil {
		c.attrs = map[string]any{}
	}
	for _, a := range attrs {
		flatten(c.attrs, h.groups, a)
	}
	return &c
}

// WithGroup returns a handler that nests later attributes under name; an
// empty name returns h, as the slog.Handler contract asks.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.groups = append(h.groups[:len(h.groups):len(h.groups)], name)
	return &c
}

// Records returns the captured records in the order they were handled.
func (h *LogHandler) Records() []LogRecord {
	h.sink.mu.Lock()
	defer h.sink.mu.Unlock()
	return append(make([]LogRecord, 0, len(h.sink.records)), h.sink.records...)
}

// Reset discards the captured records.
func (h *LogHandler) Reset() {
	h.sink.mu.Lock()
	h.sink.records = nil
	h.sink.mu.Unlock()
}

// flatten writes a into dst under groups, descending into group values. Empty
// attributes and empty groups are dropped, as slog.Handler requires; a group
// with an empty key inlines its attributes.
func flatten(dst map[string]any, groups []string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() != slog.KindGroup {
		dst[strings.Join(append(groups[:len(groups):len(groups)], a.Key), ".")] = a.Value.Any()
		return
	}
	inner := groups
	if a.Key != "" {
		inner = append(groups[:len(groups):len(groups)], a.Key)
	}
	for _, g := range a.Value.Group() {
		flatten(dst, inner, g)
	}
}
