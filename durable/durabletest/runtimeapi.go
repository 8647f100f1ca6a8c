package durabletest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-go/cairn/durable"
)

// RuntimeAPI is a local Lambda Runtime API (the next, response, error and
// init/error endpoints of version 2018-06-01), so that a function built with
// aws-lambda-go's lambda.Start runs unmodified, pointed at it through
// AWS_LAMBDA_RUNTIME_API, and receives durable invocation payloads. It
// implements [Invoker]: Handle queues one invocation and waits for the
// function's response.
type RuntimeAPI struct {
	srv  *http.Server
	addr string

	queue chan pending
	mu    sync.Mutex
	open  map[string]pending
	seq   int
	// InitError is set when the function reported an initialisation failure.
	initErr error
}

type pending struct {
	id      string
	payload []byte
	done    chan result
}

type result struct {
	body []byte
	err  error
}

// ErrFunction is a failure the function reported through the error endpoint.
var ErrFunction = errors.New("durabletest: function returned an error")

// NewRuntimeAPI listens on a loopback port; Close stops it.
func NewRuntimeAPI() (*RuntimeAPI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &RuntimeAPI{addr: ln.Addr().String(), queue: make(chan pending, 16), open: map[string]pending{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", r.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", r.finish(false))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", r.finish(true))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", r.initError)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Addr is the value for AWS_LAMBDA_RUNTIME_API (host:port).
func (r *RuntimeAPI) Addr() string { return r.addr }

// Close stops the server; a function blocked on next sees its connection end.
func (r *RuntimeAPI) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = r.srv.Close()
	}
	return err
}

func (r *RuntimeAPI) next(w http.ResponseWriter, req *http.Request) {
	var p pending
	select {
	case p = <-r.queue:
	case <-req.Context().Done():
		return
	}
	r.mu.Lock()
	r.open[p.id] = p
	r.mu.Unlock()
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", p.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:durable-example")
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(p.payload)
}

func (r *RuntimeAPI) finish(isErr bool) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id := req.PathValue("id")
		r.mu.Lock()
		p, ok := r.open[id]
		delete(r.open, id)
		r.mu.Unlock()
		if !ok {
			http.Error(w, `{"errorMessage":"unknown request ID","errorType":"InvalidRequestID"}`, http.StatusBadRequest)
			return
		}
		res := result{body: body}
		if isErr {
			res.err = fmt.Errorf("%w: %s", ErrFunction, body)
		}
		p.done <- res
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status":"OK"}`))
	}
}

func (r *RuntimeAPI) initError(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.initErr = fmt.Errorf("%w: init: %s", ErrFunction, body)
	r.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// Handle sends in to the function as the service would (timestamps as epoch
// seconds) and decodes its response.
func (r *RuntimeAPI) Handle(ctx context.Context, in durable.Input) (durable.Output, error) {
	payload, err := wirePayload(in)
	if err != nil {
		return durable.Output{}, err
	}
	r.mu.Lock()
	r.seq++
	p := pending{id: fmt.Sprintf("req-%d", r.seq), payload: payload, done: make(chan result, 1)}
	initErr := r.initErr
	r.mu.Unlock()
	if initErr != nil {
		return durable.Output{}, initErr
	}
	select {
	case r.queue <- p:
	case <-ctx.Done():
		return durable.Output{}, ctx.Err()
	}
	select {
	case res := <-p.done:
		if res.err != nil {
			return durable.Output{}, res.err
		}
		var out durable.Output
		if err := json.Unmarshal(res.body, &out); err != nil {
			return durable.Output{}, fmt.Errorf("durabletest: function response %s: %w", res.body, err)
		}
		return out, nil
	case <-ctx.Done():
		return durable.Output{}, ctx.Err()
	}
}

var timeKeys = map[string]bool{"StartTimestamp": true, "EndTimestamp": true, "NextAttemptTimestamp": true, "ScheduledEndTimestamp": true}

// wirePayload encodes in with timestamps as epoch seconds, the service's format.
func wirePayload(in durable.Input) ([]byte, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && timeKeys[k] {
					if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
						x[k] = json.Number(strings.TrimSuffix(strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64), ".000"))
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return json.Marshal(v)
}
