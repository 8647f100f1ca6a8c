package workflow_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/internal/memworld"
	"github.com/cairn-go/cairn/worlds"
)

// Staged upserts search attributes around a step and a hook, and twice in a
// row before it returns.
type Staged struct{}

func (Staged) Run(ctx workflow.Context, customer string) (string, error) {
	if err := workflow.UpsertAttributes(ctx, map[string]string{"customer": customer, "stage": "start"}); err != nil {
		return "", err
	}
	if _, err := workflow.Step(ctx, "a", func(context.Context, string) (string, error) { return "a", nil }, ""); err != nil {
		return "", err
	}
	if err := workflow.UpsertAttributes(ctx, map[string]string{"stage": "waiting"}); err != nil {
		return "", err
	}
	h, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: "staged-" + customer})
	if err != nil {
		return "", err
	}
	if _, err := h.Receive(ctx); err != nil {
		return "", err
	}
	if err := workflow.UpsertAttributes(ctx, map[string]string{"stage": "done"}); err != nil {
		return "", err
	}
	return "ok", workflow.UpsertAttributes(ctx, map[string]string{"extra": "1"})
}

// Upserted attributes show in the run's view and select it in listings; a
// changed value stops matching its old one; each call is recorded once,
// however often the run is replayed (the nocache pass replays it on every
// delivery), and calls just before the end are recorded with it.
func testUpsertAttributes(t *testing.T, newWorld func(*testing.T) worlds.World) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	h := serve(t, w, workflow.Config{}, workflow.Use(Staged{}))
	customer := strings.ReplaceAll(t.Name(), "/", "-")
	run, err := workflow.Start(ctx, h.c, Staged{}, customer)
	if err != nil {
		t.Fatal(err)
	}
	list := func(attrs map[string]string) []string {
		t.Helper()
		page, err := w.ListRuns(ctx, worlds.RunFilter{Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range page.Items {
			ids = append(ids, r.RunID)
		}
		return ids
	}
	waitFor(t, func() bool { _, err := w.GetHookByToken(ctx, "staged-"+customer); return err == nil })
	if r, _ := w.GetRun(ctx, run.ID()); r.Attributes["stage"] != "waiting" || r.Attributes["customer"] != customer {
		t.Fatalf("attributes while waiting = %v", r.Attributes)
	}
	// A World may list from an index that lags its writes a moment (the AWS
	// World's GSI); it never lists a run by a value the run no longer has.
	waitFor(t, func() bool {
		got := list(map[string]string{"customer": customer, "stage": "waiting"})
		return len(got) == 1 && got[0] == run.ID()
	})
	if got := list(map[string]string{"customer": customer, "stage": "start"}); len(got) != 0 {
		t.Fatalf("runs with the replaced stage=start = %v, want none", got)
	}
	if _, err := workflow.ResumeHook(ctx, h.c, "staged-"+customer, "go"); err != nil {
		t.Fatal(err)
	}
	if out, err := run.Result(resultCtx(t)); err != nil || out != "ok" {
		t.Fatalf("result = %q, %v", out, err)
	}
	r, err := w.GetRun(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(map[string]string{"customer": customer, "stage": "done", "extra": "1"}); fmt.Sprint(r.Attributes) != want {
		t.Fatalf("attributes at the end = %v, want %v", r.Attributes, want)
	}
	waitFor(t, func() bool {
		return len(list(map[string]string{"customer": customer, "stage": "done", "extra": "1"})) == 1
	})
	events, err := worlds.AllEvents(ctx, w, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range events {
		if ev.Type == worlds.EventAttributesSet {
			ids = append(ids, ev.CorrelationID)
		}
	}
	if got, want := strings.Join(ids, ","), "attrs_0_1,attrs_1_1,attrs_2_1,attrs_2_2"; got != want {
		t.Fatalf("attributes_set records = %s, want %s: one per call", got, want)
	}
}

// Upsert calls UpsertAttributes with its input and reports the error.
type Upsert struct{}

func (Upsert) Run(ctx workflow.Context, attrs map[string]string) (string, error) {
	err := workflow.UpsertAttributes(ctx, attrs)
	var ae *workflow.AttributeError
	switch {
	case err == nil:
		return "ok", nil
	case errors.As(err, &ae) && errors.Is(err, workflow.ErrInvalidAttribute) && errors.Is(err, worlds.ErrInvalidArgument):
		return "key=" + ae.Key + ": " + ae.Reason, nil
	}
	return "", err
}

func TestUpsertAttributesRefused(t *testing.T) {
	t.Parallel()
	w := memworld.New()
	h := serve(t, w, workflow.Config{}, workflow.Use(Upsert{}))
	full := map[string]string{}
	for i := range worlds.MaxAttributes {
		full[fmt.Sprintf("k%d", i)] = "v"
	}
	too := map[string]string{"extra": "v"}
	for k, v := range full {
		too[k] = v
	}
	for _, tc := range []struct {
		name  string
		start map[string]string
		in    map[string]string
		want  string
	}{
		{"ok", nil, map[string]string{"Order_id.v2:x-y": "ünïcode"}, "ok"},
		{"empty call", nil, map[string]string{}, "ok"},
		{"reserved key", nil, map[string]string{"cairn.parent": "x"}, "key=cairn.parent: keys starting with"},
		{"key with =", nil, map[string]string{"a=b": "x"}, "key=a=b: byte 1"},
		{"key with #", nil, map[string]string{"a#b": "x"}, "key=a#b: byte 1"},
		{"key starting with a digit", nil, map[string]string{"1a": "x"}, "key=1a: a key must start with an ASCII letter"},
		{"key too long", nil, map[string]string{strings.Repeat("k", worlds.MaxAttributeKeyLength+1): "x"}, "key=kkkk"},
		{"value too long", nil, map[string]string{"k": strings.Repeat("v", worlds.MaxAttributeValueLength+1)}, "key=k: value of 1025 bytes"},
		{"control character", nil, map[string]string{"k": "a\nb"}, "key=k: value must not hold control characters"},
		{"too many in one call", nil, too, "key=: 51 pairs in one call"},
		{"run full", full, map[string]string{"extra": "v"}, "key=: the run would hold 51 attributes"},
		{"run full, existing key", full, map[string]string{"k3": "w"}, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run, err := workflow.Start(context.Background(), h.c, Upsert{}, tc.in, workflow.WithAttributes(tc.start))
			if err != nil {
				t.Fatal(err)
			}
			out, err := run.Result(resultCtx(t))
			if err != nil || !strings.HasPrefix(out, tc.want) {
				t.Fatalf("UpsertAttributes(%.60v) = %q, %v; want %q", tc.in, out, err, tc.want)
			}
			events, err := worlds.AllEvents(context.Background(), w, run.ID())
			if err != nil {
				t.Fatal(err)
			}
			recorded := 0
			for _, ev := range events {
				if ev.Type == worlds.EventAttributesSet {
					recorded++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tc.want == "ok" && len(tc.in) > 0]; recorded != want {
				t.Fatalf("%d attributes_set recorded, want %d", recorded, want)
			}
		})
	}
}
