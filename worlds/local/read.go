package local

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cairn-go/cairn/worlds"
)

// GetRun implements [worlds.World].
func (w *World) GetRun(ctx context.Context, runID string) (worlds.Run, error) {
	r, err := getRun(ctx, w.db, runID)
	if err != nil {
		return worlds.Run{}, err
	}
	return *r, nil
}

// cursor is the position after the last item of a page: a sort value and an ID.
type cursor struct {
	at int64
	id string
}

func (c cursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.at, 10) + ":" + c.id))
}

func parseCursor(s string) (cursor, bool, error) {
	if s == "" {
		return cursor{}, false, nil
	}
	bad := &worlds.ArgumentError{Field: "Cursor", Value: s, Reason: "not a cursor this World returned"}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, false, bad
	}
	at, id, ok := strings.Cut(string(b), ":")
	if !ok {
		return cursor{}, false, bad
	}
	n, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return cursor{}, false, bad
	}
	return cursor{at: n, id: id}, true, nil
}

// page runs a listing query that selects (data, sort value, id) with limit+1 rows
// and returns its items and the cursor for the next page.
func page[T any](ctx context.Context, q querier, limit int, query string, args ...any) (worlds.Page[T], error) {
	rows, err := q.QueryContext(ctx, query, append(args, limit+1)...)
	if err != nil {
		return worlds.Page[T]{}, err
	}
	defer rows.Close()
	var p worlds.Page[T]
	var last cursor
	for rows.Next() {
		var b []byte
		var c cursor
		if err := rows.Scan(&b, &c.at, &c.id); err != nil {
			return worlds.Page[T]{}, err
		}
		if len(p.Items) == limit {
			p.Cursor = last.String()
			break
		}
		v, err := decode[T](b)
		if err != nil {
			return worlds.Page[T]{}, err
		}
		p.Items = append(p.Items, v)
		last = c
	}
	if p.Items == nil {
		p.Items = []T{}
	}
	return p, rows.Err()
}

// ListRuns implements [worlds.World]: newest first.
func (w *World) ListRuns(ctx context.Context, f worlds.RunFilter) (worlds.Page[worlds.Run], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	if f.Status != "" && !f.Status.Valid() {
		return worlds.Page[worlds.Run]{}, &worlds.ArgumentError{Field: "RunFilter.Status", Value: f.Status, Reason: "unknown run status"}
	}
	if err := worlds.ValidateAttributeFilter(f.Attributes); err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	c, ok, err := parseCursor(f.Cursor)
	if err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	// Without an attribute filter the runs table is read in listing order. With
	// one, the rows of one pair in run_attributes are (by its index, in listing
	// order), joined to their runs; the other pairs are checked per run through
	// the primary key of run_attributes.
	from, col := "runs r", "r"
	var where []string
	var args []any
	keys := slices.Sorted(maps.Keys(f.Attributes))
	if len(keys) > 0 {
		from, col = "run_attributes a JOIN runs r ON r.run_id = a.run_id", "a"
		where, args = append(where, "a.key = ? AND a.value = ?"), append(args, keys[0], f.Attributes[keys[0]])
		for _, k := range keys[1:] {
			where = append(where, "EXISTS (SELECT 1 FROM run_attributes b WHERE b.run_id = r.run_id AND b.key = ? AND b.value = ?)")
			args = append(args, k, f.Attributes[k])
		}
	}
	if f.WorkflowName != "" {
		where, args = append(where, "r.workflow_name = ?"), append(args, f.WorkflowName)
	}
	if f.Status != "" {
		where, args = append(where, "r.status = ?"), append(args, string(f.Status))
	}
	if !f.CreatedAfter.IsZero() {
		where, args = append(where, col+".created_at > ?"), append(args, nanos(f.CreatedAfter))
	}
	if !f.CreatedBefore.IsZero() {
		where, args = append(where, col+".created_at < ?"), append(args, nanos(f.CreatedBefore))
	}
	if ok {
		where, args = append(where, "("+col+".created_at < ? OR ("+col+".created_at = ? AND "+col+".run_id < ?))"), append(args, c.at, c.at, c.id)
	}
	q := "SELECT r.data, " + col + ".created_at, " + col + ".run_id FROM " + from
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + col + ".created_at DESC, " + col + ".run_id DESC LIMIT ?"
	return page[worlds.Run](ctx, w.db, limit, q, args...)
}

// ListEvents implements [worlds.World]: in log order.
func (w *World) ListEvents(ctx context.Context, runID string, f worlds.EventFilter) (worlds.Page[worlds.Event], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Event]{}, err
	}
	c, ok, err := parseCursor(f.Cursor)
	if err != nil {
		return worlds.Page[worlds.Event]{}, err
	}
	if _, err := getRun(ctx, w.db, runID); err != nil {
		return worlds.Page[worlds.Event]{}, err
	}
	after := f.AfterSeq
	if ok && c.at > after {
		after = c.at
	}
	return page[worlds.Event](ctx, w.db, limit,
		`SELECT data, seq, '' FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, runID, after)
}

// GetStep implements [worlds.World].
func (w *World) GetStep(ctx context.Context, runID, stepID string) (worlds.Step, error) {
	s, err := txLoader{w.db}.Step(ctx, runID, stepID)
	if err != nil {
		return worlds.Step{}, err
	}
	if s == nil {
		return worlds.Step{}, fmt.Errorf("%w: run %q step %q", worlds.ErrStepNotFound, runID, stepID)
	}
	return *s, nil
}

// ListSteps implements [worlds.World]: in creation order.
func (w *World) ListSteps(ctx context.Context, runID string, f worlds.ListFilter) (worlds.Page[worlds.Step], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Step]{}, err
	}
	c, _, err := parseCursor(f.Cursor)
	if err != nil {
		return worlds.Page[worlds.Step]{}, err
	}
	if _, err := getRun(ctx, w.db, runID); err != nil {
		return worlds.Page[worlds.Step]{}, err
	}
	return page[worlds.Step](ctx, w.db, limit,
		`SELECT data, ord, step_id FROM steps WHERE run_id = ? AND ord > ? ORDER BY ord LIMIT ?`, runID, c.at)
}

// GetHook implements [worlds.World].
func (w *World) GetHook(ctx context.Context, hookID string) (worlds.Hook, error) {
	h, err := txLoader{w.db}.Hook(ctx, hookID)
	if err != nil {
		return worlds.Hook{}, err
	}
	if h == nil {
		return worlds.Hook{}, fmt.Errorf("%w: %q", worlds.ErrHookNotFound, hookID)
	}
	return *h, nil
}

// GetHookByToken implements [worlds.World].
func (w *World) GetHookByToken(ctx context.Context, token string) (worlds.Hook, error) {
	h, err := txLoader{w.db}.TokenOwner(ctx, token)
	if err != nil {
		return worlds.Hook{}, err
	}
	if h == nil {
		return worlds.Hook{}, fmt.Errorf("%w: no active hook owns the token", worlds.ErrHookNotFound)
	}
	return *h, nil
}

// ListHooks implements [worlds.World]: newest first.
func (w *World) ListHooks(ctx context.Context, f worlds.HookFilter) (worlds.Page[worlds.Hook], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Hook]{}, err
	}
	c, ok, err := parseCursor(f.Cursor)
	if err != nil {
		return worlds.Page[worlds.Hook]{}, err
	}
	var where []string
	var args []any
	if f.RunID != "" {
		where, args = append(where, "run_id = ?"), append(args, f.RunID)
	}
	if ok {
		where, args = append(where, "(created_at < ? OR (created_at = ? AND hook_id < ?))"), append(args, c.at, c.at, c.id)
	}
	q := "SELECT data, created_at, hook_id FROM hooks"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, hook_id DESC LIMIT ?"
	return page[worlds.Hook](ctx, w.db, limit, q, args...)
}

// GetWait implements [worlds.World].
func (w *World) GetWait(ctx context.Context, runID, waitID string) (worlds.Wait, error) {
	wt, err := txLoader{w.db}.Wait(ctx, runID, waitID)
	if err != nil {
		return worlds.Wait{}, err
	}
	if wt == nil {
		return worlds.Wait{}, fmt.Errorf("%w: run %q wait %q", worlds.ErrWaitNotFound, runID, waitID)
	}
	return *wt, nil
}
