package workflow

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

type stepScopeKey struct{}

// stepScope is what a step attempt's context carries for step-only APIs.
type stepScope struct {
	world worlds.World
	runID string
	beat  *heartbeat
}

func withStepScope(ctx context.Context, s stepScope) context.Context {
	return context.WithValue(ctx, stepScopeKey{}, s)
}

func stepScopeFrom(ctx context.Context) (stepScope, error) {
	if ctx == nil {
		return stepScope{}, ErrNotInStep
	}
	s, ok := ctx.Value(stepScopeKey{}).(stepScope)
	if !ok {
		return stepScope{}, ErrNotInStep
	}
	return s, nil
}

// WriteStream appends chunk to the named stream of the run the calling step belongs
// to. It works only with a step attempt's context (or one derived from it):
// workflow code replays, so it must not write. A retried attempt writes again, so
// readers may see a chunk once per attempt.
func WriteStream(ctx context.Context, name string, chunk []byte) error {
	s, err := stepScopeFrom(ctx)
	if err != nil {
		return err
	}
	if name == "" {
		return &ConfigError{Field: "stream name", Value: `""`, Reason: "required"}
	}
	_, err = s.world.WriteStream(ctx, s.runID, name, chunk)
	return err
}

// CloseStream closes the named stream of the calling step's run, ending its readers.
// Streams still open when a run ends are closed by the runtime.
func CloseStream(ctx context.Context, name string) error {
	s, err := stepScopeFrom(ctx)
	if err != nil {
		return err
	}
	return s.world.CloseStream(ctx, s.runID, name)
}

// ReadStream yields the chunks of a run's stream from the first, then live as they
// are written, until the stream closes, the run ends with nothing more to read, or
// ctx ends. Where the World pushes notifications ([worlds.StreamNotifier]) the
// reader subscribes before reading the backlog, so nothing is missed, and
// de-duplicates by chunk index; otherwise it polls. An error ends the sequence.
func (c *Client) ReadStream(ctx context.Context, runID, name string) iter.Seq2[worlds.Chunk, error] {
	return func(yield func(worlds.Chunk, error) bool) {
		var notify <-chan struct{}
		if n, ok := c.eng.world.(worlds.StreamNotifier); ok && c.eng.world.Capabilities().LiveStreams {
			ch, stop := n.SubscribeStream(runID, name)
			defer stop()
			notify = ch
		}
		next := 0
		delay := 5 * time.Millisecond
		for {
			page, err := c.eng.world.ReadStream(ctx, runID, name, next, worlds.DefaultPageSize)
			notFound := errors.Is(err, worlds.ErrStreamNotFound)
			if err != nil && !notFound {
				yield(worlds.Chunk{}, err)
				return
			}
			progressed := false
			for _, ch := range page.Chunks {
				if ch.Index < next {
					continue // already yielded
				}
				next = ch.Index + 1
				progressed = true
				if !yield(ch, nil) {
					return
				}
			}
			if page.Closed && next >= page.Next {
				return
			}
			if progressed {
				delay = 5 * time.Millisecond
				continue
			}
			// Nothing new: a stream of a finished run gets no more chunks.
			run, err := c.eng.world.GetRun(ctx, runID)
			if err != nil {
				yield(worlds.Chunk{}, err)
				return
			}
			if run.Status.Terminal() {
				final, err := c.eng.world.ReadStream(ctx, runID, name, next, worlds.DefaultPageSize)
				if err == nil && len(final.Chunks) > 0 {
					continue
				}
				return
			}
			wait := delay
			if notify != nil {
				wait = c.eng.poll * 5 // notifications carry the load; poll rarely for run ends
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				yield(worlds.Chunk{}, ctx.Err())
				return
			case <-notify:
				t.Stop()
			case <-t.C:
			}
			delay = min(delay*2, c.eng.poll)
		}
	}
}
