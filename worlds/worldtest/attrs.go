package worldtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
)

// attributeFilters checks RunFilter.Attributes: exact matches on every pair,
// newest first across pages, attributes set at start and by attributes_set
// alike, a changed value no longer matching its old one, and the filter
// combined with the others.
func (s *suite) attributeFilters(t *testing.T) {
	w := s.shared
	c := ctx(t)
	wf := uid(t, "wf")
	tenant := uid(t, "tenant") // unique to this test: the shared World holds other runs
	var ids []string
	for i := 0; i < 7; i++ {
		attrs := map[string]string{"tenant": tenant}
		if i%2 == 1 {
			attrs["tier"] = "gold"
		}
		id := fmt.Sprintf("%s-%d", uid(t, "run"), i)
		appendOK(t, w, id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: wf, Attributes: attrs})
		ids = append(ids, id)
		time.Sleep(2 * time.Millisecond) // distinct creation times, so newest-first is checkable
	}
	// A run of another workflow with the same pairs, for the workflow filter.
	other := uid(t, "run")
	appendOK(t, w, other, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: uid(t, "wf"), Attributes: map[string]string{"tenant": tenant, "tier": "gold"}})

	// Runs 2 and 5 gain or keep tier=gold later; run 3 moves from gold to
	// silver, so its old value must stop matching. The correlation ID is what
	// the runtime writes for workflow.UpsertAttributes.
	appendOK(t, w, ids[2], worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventAttributesSet, CorrelationID: "attrs_0_1", Attributes: map[string]string{"tier": "gold", "region": "eu"}})
	appendOK(t, w, ids[5], worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"tier": "gold"}})
	appendOK(t, w, ids[3], worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"tier": "silver"}})
	appendOK(t, w, ids[5], worlds.Event{Type: worlds.EventRunStarted}, worlds.Event{Type: worlds.EventRunCompleted})

	run, err := w.GetRun(c, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"tenant": tenant, "tier": "gold", "region": "eu"}; fmt.Sprint(run.Attributes) != fmt.Sprint(want) {
		t.Errorf("GetRun attributes = %v, want %v", run.Attributes, want)
	}
	page, err := w.ListEvents(c, ids[2], worlds.EventFilter{AfterSeq: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].CorrelationID != "attrs_0_1" {
		t.Errorf("attributes_set with a correlation ID stored as %+v", page.Items)
	}

	join := func(i ...int) string {
		var out []string
		for _, n := range i {
			out = append(out, ids[n])
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name   string
		filter worlds.RunFilter
		limit  int
		want   string
	}{
		{"one pair, paged", worlds.RunFilter{WorkflowName: wf, Attributes: map[string]string{"tenant": tenant}, Limit: 2}, 2, join(6, 5, 4, 3, 2, 1, 0)},
		{"two pairs, paged", worlds.RunFilter{WorkflowName: wf, Attributes: map[string]string{"tenant": tenant, "tier": "gold"}, Limit: 1}, 1, join(5, 2, 1)},
		{"changed value", worlds.RunFilter{Attributes: map[string]string{"tenant": tenant, "tier": "silver"}}, 0, join(3)},
		{"three pairs", worlds.RunFilter{Attributes: map[string]string{"tenant": tenant, "tier": "gold", "region": "eu"}}, 0, join(2)},
		{"with status", worlds.RunFilter{WorkflowName: wf, Status: worlds.RunCompleted, Attributes: map[string]string{"tenant": tenant, "tier": "gold"}}, 0, join(5)},
		{"every workflow", worlds.RunFilter{Attributes: map[string]string{"tier": "gold", "tenant": tenant}, Limit: 2}, 2, other + "," + join(5, 2, 1)},
		{"no such value", worlds.RunFilter{Attributes: map[string]string{"tenant": tenant, "tier": "bronze"}}, 0, ""},
		{"no such key", worlds.RunFilter{Attributes: map[string]string{"tenant": tenant, "colour": "gold"}}, 0, ""},
	} {
		s.eventually(t, func() string {
			if got := strings.Join(listRuns(t, w, tc.filter, tc.limit), ","); got != tc.want {
				return fmt.Sprintf("%s: ListRuns(%v) = %v, want %v", tc.name, tc.filter.Attributes, got, tc.want)
			}
			return ""
		})
	}

	// The time bounds apply to the attribute listing too.
	r1, err := w.GetRun(c, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	r6, err := w.GetRun(c, ids[6])
	if err != nil {
		t.Fatal(err)
	}
	s.eventually(t, func() string {
		f := worlds.RunFilter{Attributes: map[string]string{"tenant": tenant}, CreatedAfter: r1.CreatedAt, CreatedBefore: r6.CreatedAt, Limit: 2}
		if got, want := strings.Join(listRuns(t, w, f, 2), ","), join(5, 4, 3, 2); got != want {
			return fmt.Sprintf("ListRuns(tenant, after run 1, before run 6) = %v, want %v", got, want)
		}
		return ""
	})

	for _, bad := range []map[string]string{
		{"": "x"},
		{"tenant": strings.Repeat("v", worlds.MaxAttributeValueLength+1)},
		{strings.Repeat("k", worlds.MaxAttributeKeyLength+1): "x"},
	} {
		if _, err := w.ListRuns(c, worlds.RunFilter{Attributes: bad}); !errors.Is(err, worlds.ErrInvalidArgument) {
			t.Errorf("ListRuns with attribute filter %.40v: %v, want ErrInvalidArgument", bad, err)
		}
	}
}
