package awsworld_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// viewJSON is the run view's data as JSON, inflated when it is compressed.
func (e *env) viewJSON(t *testing.T, runID string) string {
	t.Helper()
	data, err := awsworld.DataJSON(e.rawItem(t, "RUN#"+runID, "META"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// held decodes what the run view holds: its data is then the array
// [run, {"steps": [{"seq", "step"}...], "events": [...]}].
func (e *env) held(t *testing.T, runID string) (steps []worlds.Step, events []worlds.Event) {
	t.Helper()
	data := e.viewJSON(t, runID)
	if !strings.HasPrefix(data, "[") {
		return nil, nil
	}
	var run worlds.Run
	var held struct {
		Steps  []struct{ Step worlds.Step }
		Events []worlds.Event
	}
	if err := json.Unmarshal([]byte(data), &[]any{&run, &held}); err != nil {
		t.Fatal(err)
	}
	if run.RunID != runID {
		t.Fatalf("run view data holds run %q", run.RunID)
	}
	for _, o := range held.Steps {
		steps = append(steps, o.Step)
	}
	return steps, held.Events
}

// openStepIDs lists the steps the run view holds, listed or rebuilt from its
// tail.
func (e *env) openStepIDs(t *testing.T, runID string) []string {
	t.Helper()
	steps, err := awsworld.HeldSteps(e.rawItem(t, "RUN#"+runID, "META"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range steps {
		ids = append(ids, s.StepID)
	}
	return ids
}

// heldEventSeqs lists the seqs of the events the run view holds.
func (e *env) heldEventSeqs(t *testing.T, runID string) []int64 {
	t.Helper()
	_, events := e.held(t, runID)
	var seqs []int64
	for _, ev := range events {
		seqs = append(seqs, ev.Seq)
	}
	return seqs
}

func (e *env) checkSteps(t *testing.T, runID string, want ...string) {
	t.Helper()
	page, err := e.w.ListSteps(context.Background(), runID, worlds.ListFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range page.Items {
		got = append(got, s.StepID+":"+string(s.Status))
		one, err := e.w.GetStep(context.Background(), runID, s.StepID)
		if err != nil || one.Status != s.Status || one.Attempt != s.Attempt {
			t.Fatalf("GetStep(%s) = %+v, %v; listed %+v", s.StepID, one, err, s)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("steps = %v, want %v", got, want)
	}
	// A page of one continues in creation order.
	page, err = e.w.ListSteps(context.Background(), runID, worlds.ListFilter{Limit: 1})
	for i := 0; err == nil && page.Cursor != ""; i++ {
		if id := page.Items[0].StepID; !strings.HasPrefix(want[i], id+":") {
			t.Fatalf("page %d: %s, want %s", i, id, want[i])
		}
		page, err = e.w.ListSteps(context.Background(), runID, worlds.ListFilter{Limit: 1, Cursor: page.Cursor})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnfinishedStepsLiveInTheRunView checks where steps are stored: an
// unfinished step in the run view, which every append writes anyway, and a
// finished one, or one too large for the run view's write units, in its item.
// A step finished by an append written as the run view alone stays there, as
// well as in its item, until the next append.
func TestUnfinishedStepsLiveInTheRunView(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const run = "open"
	mustAppend(t, e.w, run, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Input: wideInput}, worlds.Event{Type: worlds.EventRunStarted})
	mustAppend(t, e.w, run, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "a", Input: json.RawMessage(`1`)},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1})
	if e.rawItem(t, "RUN#"+run, "STEP#s1") != nil {
		t.Fatal("a running step has an item of its own")
	}
	if got := e.openStepIDs(t, run); len(got) != 1 || got[0] != "s1" {
		t.Fatalf("run view holds %v, want [s1]", got)
	}
	e.checkSteps(t, run, "s1:running")
	// A version that predates this layout decodes the data as one run object;
	// it must fail, rather than append and rewrite the run view without s1.
	// Such versions read the data as a string attribute.
	var older worlds.Run
	str, _ := e.rawItem(t, "RUN#"+run, "META")["data"].(*types.AttributeValueMemberS)
	if str != nil && json.Unmarshal([]byte(str.Value), &older) == nil {
		t.Fatal("a run view holding steps decodes as a plain run")
	}

	// The step's completion, written as the run view alone, leaves it there
	// beside the next step; the writer then writes its item, and the next
	// append leaves it out of the run view.
	mustAppend(t, e.w, run, worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "s1", Output: json.RawMessage(`"done"`)},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s2", StepName: "b"},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s2", Attempt: 1})
	if got := e.openStepIDs(t, run); strings.Join(got, ",") != "s1,s2" {
		t.Fatalf("run view holds %v, want [s1 s2]", got)
	}
	e.checkSteps(t, run, "s1:completed", "s2:running")

	// A retry keeps the step open in the run view, with its new state.
	retryAt := e.clock.Now().Add(time.Minute)
	mustAppend(t, e.w, run, worlds.Event{Type: worlds.EventStepRetrying, CorrelationID: "s2", Error: &worlds.ErrorInfo{Message: "again"}, RetryAt: &retryAt})
	if e.rawItem(t, "RUN#"+run, "STEP#s2") != nil {
		t.Fatal("a retrying step has an item of its own")
	}
	item := e.rawItem(t, "RUN#"+run, "STEP#s1")
	if item == nil || item["created_seq"].(*types.AttributeValueMemberN).Value != "3" {
		t.Fatalf("finished step's item = %v, want created_seq 3", item)
	}
	if got := e.openStepIDs(t, run); len(got) != 1 || got[0] != "s2" {
		t.Fatalf("run view holds %v, want [s2]", got)
	}
	e.checkSteps(t, run, "s1:completed", "s2:pending")
	if s2, err := e.w.GetStep(context.Background(), run, "s2"); err != nil || s2.Status != worlds.StepPending || s2.Error == nil {
		t.Fatalf("retrying step = %+v, %v", s2, err)
	}

	// A step that does not fit beside the run view gets its item at once.
	big := json.RawMessage(`"` + incompressible(6000) + `"`)
	mustAppend(t, e.w, run, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s3", StepName: "c", Input: big})
	if e.rawItem(t, "RUN#"+run, "STEP#s3") == nil {
		t.Fatal("a 6 KB step is held in the run view")
	}
	e.checkSteps(t, run, "s1:completed", "s2:pending", "s3:pending")

	// When the run view grows, an open step moves out to its item, unchanged:
	// an attribute takes the run view to about 1,900 bytes, too close to its
	// second KB for s2 (about 300 bytes of JSON).
	base := 0
	for name, v := range e.rawItem(t, "RUN#"+run, "META") {
		if sv, ok := v.(*types.AttributeValueMemberS); ok {
			base += len(name) + len(sv.Value)
		}
	}
	base += len("data") + len(e.viewJSON(t, run)) // the step placement counts it uncompressed
	base -= 300                                   // s2, held in the data
	target := 1900
	for target < base+50 {
		target += 1024
	}
	mustAppend(t, e.w, run, worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"note": strings.Repeat("n", target-base)}})
	if got := e.openStepIDs(t, run); len(got) != 0 {
		t.Fatalf("run view of about 1 KB still holds %v", got)
	}
	if item := e.rawItem(t, "RUN#"+run, "STEP#s2"); item == nil || item["created_seq"].(*types.AttributeValueMemberN).Value != "6" {
		t.Fatalf("moved step's item = %v, want created_seq 6", item)
	}
	e.checkSteps(t, run, "s1:completed", "s2:pending", "s3:pending")
	e.clock.Advance(time.Minute)
	mustAppend(t, e.w, run, worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s2", Attempt: 2},
		worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "s2", Output: json.RawMessage(`2`)})
	e.checkSteps(t, run, "s1:completed", "s2:completed", "s3:pending")

	// Events that need a step still find it wherever it is.
	if _, err := e.w.Append(context.Background(), run, worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "s2"}); err == nil {
		t.Fatal("a second completion of s2 was accepted")
	}
}
