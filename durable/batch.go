package durable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Batch item statuses. ItemStarted marks a branch that started and did not
// finish: the completion policy was met while it ran or was suspended. A
// branch the batch never started has no item, as in the official SDKs.
const (
	ItemSucceeded = "SUCCEEDED"
	ItemFailed    = "FAILED"
	ItemStarted   = "STARTED"
)

// Completion reasons of a batch.
const (
	AllCompleted             = "ALL_COMPLETED"
	MinSuccessfulReached     = "MIN_SUCCESSFUL_REACHED"
	FailureToleranceExceeded = "FAILURE_TOLERANCE_EXCEEDED"
)

// BatchItem is the outcome of one branch.
type BatchItem[T any] struct {
	// Index is the branch's position in the call.
	Index int
	// Status is ItemSucceeded, ItemFailed or ItemStarted.
	Status string
	// Result is the branch's result when it succeeded.
	Result T
	// Error is the branch's failure when it failed (ErrorType
	// "ChildContextError"; Type, Message and Data are the branch's).
	Error *OperationError
}

// BatchResult is the outcome of [Parallel] or [Map]: the items of the
// branches that started, in branch order. It is checkpointed as the batch
// context's result in the official SDKs' shape,
// {"all":[{"result","error","index","status"}],"completionReason"}.
type BatchResult[T any] struct {
	All              []BatchItem[T]
	CompletionReason string
}

// Succeeded counts the branches that succeeded.
func (r BatchResult[T]) Succeeded() int { return r.count(ItemSucceeded) }

// Failed counts the branches that failed.
func (r BatchResult[T]) Failed() int { return r.count(ItemFailed) }

// Started counts the branches that started and did not finish.
func (r BatchResult[T]) Started() int { return r.count(ItemStarted) }

// Total is the number of items: the branches that started.
func (r BatchResult[T]) Total() int { return len(r.All) }

func (r BatchResult[T]) count(status string) int {
	n := 0
	for _, it := range r.All {
		if it.Status == status {
			n++
		}
	}
	return n
}

// Item returns the item of branch index, and false when that branch never started.
func (r BatchResult[T]) Item(index int) (BatchItem[T], bool) {
	for _, it := range r.All {
		if it.Index == index {
			return it, true
		}
	}
	return BatchItem[T]{}, false
}

// Results returns the results of the branches that succeeded, in branch order.
func (r BatchResult[T]) Results() []T {
	var out []T
	for _, it := range r.All {
		if it.Status == ItemSucceeded {
			out = append(out, it.Result)
		}
	}
	return out
}

// Errors returns the failures of the branches that failed, in branch order.
func (r BatchResult[T]) Errors() []*OperationError {
	var out []*OperationError
	for _, it := range r.All {
		if it.Status == ItemFailed {
			out = append(out, it.Error)
		}
	}
	return out
}

// Err joins the branch failures into one error (nil when none failed), for
// callers that want to fail on any failure, as the official SDKs'
// throwIfError does. When the failure tolerance was exceeded it also matches
// [ErrBatchFailed].
func (r BatchResult[T]) Err() error {
	var errs []error
	for _, e := range r.Errors() {
		errs = append(errs, e)
	}
	if r.CompletionReason == FailureToleranceExceeded {
		return fmt.Errorf("%w: %d of %d started branches failed: %w", ErrBatchFailed, r.Failed(), r.Total(), errors.Join(errs...))
	}
	return errors.Join(errs...)
}

// wireError is an error object inside a batch result: the official SDKs
// record a failed item as ChildContextError, caused by the branch's failure
// as they hand it over (its own type when it is one of theirs, else
// StepError), caused by the recorded error.
type wireError struct {
	ErrorType    string     `json:"ErrorType,omitempty"`
	ErrorMessage string     `json:"ErrorMessage"`
	ErrorData    *string    `json:"ErrorData,omitempty"`
	Cause        *wireError `json:"Cause,omitempty"`
}

func itemWireError(e *OperationError) *wireError {
	var data *string
	if e.Data != "" {
		data = &e.Data
	}
	handed := e.Type
	msg := e.Message
	if !knownDurableTypes[handed] {
		handed = ErrorTypeStep
		if msg == "" {
			msg = "Unknown error"
		}
	} else if msg == "" && handed == ErrorTypeStep {
		msg = "Step failed"
	}
	recorded := &wireError{ErrorType: e.Type, ErrorMessage: e.Message}
	if recorded.ErrorType == "" {
		recorded.ErrorType = ErrorTypeError
	}
	return &wireError{ErrorType: ErrorTypeChildContext, ErrorMessage: msg, ErrorData: data,
		Cause: &wireError{ErrorType: handed, ErrorMessage: msg, ErrorData: data, Cause: recorded}}
}

// operationError reads an item's failure back: the innermost cause is the
// branch's recorded error.
func (w *wireError) operationError() *OperationError {
	inner := w
	for inner.Cause != nil {
		inner = inner.Cause
	}
	e := &OperationError{Type: inner.ErrorType, Message: inner.ErrorMessage, SDKType: ErrorTypeChildContext, Status: ItemFailed}
	if w.ErrorData != nil {
		e.Data = *w.ErrorData
	}
	return e
}

type wireItem struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
	Index  int             `json:"index"`
	Status string          `json:"status"`
}

// MarshalJSON writes the official SDKs' shape. A result with nothing to
// record (struct{}, nil) is left out, as they leave out undefined.
func (r BatchResult[T]) MarshalJSON() ([]byte, error) {
	w := struct {
		All              []wireItem `json:"all"`
		CompletionReason string     `json:"completionReason"`
	}{All: make([]wireItem, 0, len(r.All)), CompletionReason: r.CompletionReason}
	for _, it := range r.All {
		wi := wireItem{Index: it.Index, Status: it.Status}
		switch {
		case it.Status == ItemFailed && it.Error != nil:
			wi.Error = itemWireError(it.Error)
		case it.Status == ItemSucceeded && !none(any(it.Result)):
			b, err := marshalPlain(it.Result)
			if err != nil {
				return nil, err
			}
			wi.Result = b
		}
		w.All = append(w.All, wi)
	}
	return marshalPlain(w)
}

// UnmarshalJSON reads the official SDKs' shape, and the shape earlier
// releases of this package recorded ({"Items":[{"Index","Status","Result",
// "Error"}],"CompletionReason"}), where every branch had an item.
func (r *BatchResult[T]) UnmarshalJSON(b []byte) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if _, legacy := probe["Items"]; legacy {
		var old struct {
			Items []struct {
				Index  int
				Status string
				Result T
				Error  *OperationError
			}
			CompletionReason string
		}
		if err := decodePlain(b, &old); err != nil {
			return err
		}
		*r = BatchResult[T]{CompletionReason: old.CompletionReason}
		for _, it := range old.Items {
			if it.Error != nil {
				it.Error.SDKType = ErrorTypeChildContext
			}
			r.All = append(r.All, BatchItem[T]{Index: it.Index, Status: it.Status, Result: it.Result, Error: it.Error})
		}
		return nil
	}
	var w struct {
		All              []wireItem `json:"all"`
		CompletionReason string     `json:"completionReason"`
	}
	if err := decodePlain(b, &w); err != nil {
		return err
	}
	*r = BatchResult[T]{CompletionReason: w.CompletionReason, All: make([]BatchItem[T], 0, len(w.All))}
	for _, wi := range w.All {
		it := BatchItem[T]{Index: wi.Index, Status: wi.Status}
		if len(wi.Result) > 0 {
			if err := decodePlain(wi.Result, &it.Result); err != nil {
				return fmt.Errorf("all[%d].result: %w", wi.Index, err)
			}
		}
		if wi.Error != nil {
			it.Error = wi.Error.operationError()
		}
		r.All = append(r.All, it)
	}
	return nil
}

// batchSummary is the payload of a batch context whose result was too large
// for it, checkpointed with ReplayChildren, as the official SDKs write it:
// what the branches' own operations do not say. It also reads the marker of
// earlier releases ({"Total","CompletionReason"}).
type batchSummary struct {
	Type             string `json:"type"`
	TotalCount       int    `json:"totalCount"`
	SuccessCount     int    `json:"successCount"`
	FailureCount     int    `json:"failureCount"`
	StartedCount     *int   `json:"startedCount,omitempty"`
	CompletionReason string `json:"completionReason"`
	Status           string `json:"status"`
	ItemStatuses     string `json:"itemStatuses"`
}

func (m *batchSummary) UnmarshalJSON(b []byte) error {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if _, legacy := probe["Total"]; legacy {
		var old struct {
			Total            int
			CompletionReason string
		}
		if err := decodePlain(b, &old); err != nil {
			return err
		}
		*m = batchSummary{TotalCount: old.Total, CompletionReason: old.CompletionReason}
		return nil
	}
	type plain batchSummary
	return decodePlain(b, (*plain)(m))
}

// summarize is the summary of r over n branches; parallel adds startedCount
// as the TypeScript SDK's parallel summary does.
func summarize[T any](r BatchResult[T], n int, parallel bool) batchSummary {
	s := batchSummary{Type: "MapResult", TotalCount: len(r.All), SuccessCount: r.Succeeded(), FailureCount: r.Failed(),
		CompletionReason: r.CompletionReason, Status: ItemSucceeded}
	if parallel {
		s.Type = "ParallelResult"
		started := r.Started()
		s.StartedCount = &started
	}
	if s.FailureCount > 0 {
		s.Status = ItemFailed
	}
	marks := bytes.Repeat([]byte("-"), 0)
	for _, it := range r.All {
		for len(marks) <= it.Index {
			marks = append(marks, '-')
		}
		switch it.Status {
		case ItemSucceeded:
			marks[it.Index] = 'S'
		case ItemFailed:
			marks[it.Index] = 'F'
		}
	}
	s.ItemStatuses = string(marks)
	return s
}

// marshalPlain encodes v as JSON.stringify would: no HTML escaping, no newline.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// decodePlain decodes JSON keeping numbers exact.
func decodePlain(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v)
}
