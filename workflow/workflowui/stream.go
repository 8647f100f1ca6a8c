package workflowui

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cairn-go/cairn/worlds"
)

// chunkEvent is the data of one server-sent "chunk" event.
type chunkEvent struct {
	Index int    `json:"index"`
	Text  string `json:"text,omitempty"` // the chunk as text when it is valid UTF-8
	Data  []byte `json:"data,omitempty"` // otherwise its bytes (base64 in JSON)
}

// streamWriteWindow bounds each round of writes of a stream: the time a
// client that stopped reading keeps its connection.
const streamWriteWindow = time.Minute

// followStream sends a stream's chunks as server-sent events ("chunk", then
// "closed" when the stream is closed) from ?from= or Last-Event-ID onwards. It
// subscribes before reading the backlog when the World can push, and polls
// otherwise. It ends when the client goes away, the stream closes, or the run has
// finished without ever writing the stream.
func (s *ui) followStream(w http.ResponseWriter, r *http.Request) {
	// A stream outlives the server's ReadTimeout and WriteTimeout. Lift the read
	// deadline first, before it can pass (the server's background read, which
	// notices the client leaving, would end the request), and give each round of
	// writes a deadline of its own, so a client that stops reading is cut off.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	extend := func() { _ = rc.SetWriteDeadline(time.Now().Add(streamWriteWindow)) }
	extend()
	ctx, runID, name := r.Context(), r.PathValue("id"), r.PathValue("name")
	from := 0
	for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("from")} {
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, fmt.Errorf("from %q: want a chunk index", v))
			return
		}
		if v == r.Header.Get("Last-Event-ID") {
			n++ // the last event seen, so continue after it
		}
		from = n
		break
	}
	if _, err := s.world.GetRun(ctx, runID); err != nil {
		s.fail(w, r, err)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, errors.New("streaming unsupported by this connection"))
		return
	}
	var notify <-chan struct{}
	if n, ok := s.world.(worlds.StreamNotifier); ok {
		ch, stop := n.SubscribeStream(runID, name)
		defer stop()
		notify = ch
	}
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": following stream\n\n")
	flusher.Flush()
	for {
		extend()
		page, err := s.world.ReadStream(ctx, runID, name, from, 100)
		switch {
		case errors.Is(err, worlds.ErrStreamNotFound):
			// Not written yet: wait for it unless the run can no longer write it.
			if run, err := s.world.GetRun(ctx, runID); err == nil && run.Status.Terminal() {
				fmt.Fprint(w, "event: closed\ndata: {}\n\n")
				flusher.Flush()
				return
			}
		case err != nil:
			if ctx.Err() == nil {
				b, _ := json.Marshal(errorBody{Error: err.Error()})
				fmt.Fprintf(w, "event: failure\ndata: %s\n\n", b)
				flusher.Flush()
			}
			return
		default:
			for _, c := range page.Chunks {
				ev := chunkEvent{Index: c.Index}
				if utf8.Valid(c.Data) {
					ev.Text = string(c.Data)
				} else {
					ev.Data = c.Data
				}
				b, _ := json.Marshal(ev)
				fmt.Fprintf(w, "id: %d\nevent: chunk\ndata: %s\n\n", c.Index, b)
			}
			from = page.Next
			if page.Closed && len(page.Chunks) == 0 {
				fmt.Fprint(w, "event: closed\ndata: {}\n\n")
				flusher.Flush()
				return
			}
			flusher.Flush()
			if len(page.Chunks) > 0 {
				continue // drain the backlog before waiting
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-notify:
		case <-tick.C:
		}
	}
}
