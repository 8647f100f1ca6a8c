package awsworld_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// writeLog passes requests on to DynamoDB Local and records every write: "txn",
// "put META" for the run view, "out <sk>,<sk>..." for the other items an append
// puts before it (event packs by their last seq), sorted, as they are written
// side by side. Before, when set, runs before a request of the given kind
// ("txn", "put META", "out", "query") is passed on, once.
type writeLog struct {
	*dynamodb.Client
	mu     sync.Mutex
	writes []string
	before map[string]func() error
}

func (l *writeLog) record(s string) {
	l.mu.Lock()
	l.writes = append(l.writes, s)
	l.mu.Unlock()
}

func (l *writeLog) hook(op string) error {
	l.mu.Lock()
	f := l.before[op]
	delete(l.before, op)
	l.mu.Unlock()
	if f != nil {
		return f()
	}
	return nil
}

func (l *writeLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	var group []string
	flush := func() {
		if len(group) > 0 {
			sort.Strings(group)
			out = append(out, "out "+strings.Join(group, ","))
			group = nil
		}
	}
	for _, w := range l.writes {
		if rest, ok := strings.CutPrefix(w, "out "); ok {
			group = append(group, rest)
			continue
		}
		flush()
		out = append(out, w)
	}
	flush()
	l.writes = nil
	return out
}

func (l *writeLog) setBefore(op string, f func() error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.before == nil {
		l.before = map[string]func() error{}
	}
	l.before[op] = f
}

func sk(item map[string]ddbAttr) string { return item["sk"].(*ddbtypes.AttributeValueMemberS).Value }

func (l *writeLog) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if err := l.hook("txn"); err != nil {
		return nil, err
	}
	l.record("txn")
	return l.Client.TransactWriteItems(ctx, in, opts...)
}

func (l *writeLog) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	op, rec := "put META", "put META"
	if key := sk(in.Item); key != "META" {
		op, rec = "out", "out "+strings.TrimLeft(strings.TrimPrefix(key, "EVENT#"), "0")
	}
	if err := l.hook(op); err != nil {
		return nil, err
	}
	l.record(rec)
	return l.Client.PutItem(ctx, in, opts...)
}

func (l *writeLog) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := l.hook("query"); err != nil {
		return nil, err
	}
	return l.Client.Query(ctx, in, opts...)
}

// stepEvents are the events of step n's usual append: the previous step's
// outcome, then step n created and started.
func stepEvents(n int) []worlds.Event {
	id := fmt.Sprintf("s%d", n)
	return []worlds.Event{
		{Type: worlds.EventStepCompleted, CorrelationID: fmt.Sprintf("s%d", n-1), Output: json.RawMessage(fmt.Sprint(n))},
		{Type: worlds.EventStepCreated, CorrelationID: id, StepName: "inc", Input: json.RawMessage(fmt.Sprint(n))},
		{Type: worlds.EventStepStarted, CorrelationID: id, Attempt: 1},
	}
}

// loggedWorld is a World whose DynamoDB requests go through a writeLog.
func (e *env) loggedWorld(t *testing.T) (*awsworld.World, *writeLog) {
	t.Helper()
	log := &writeLog{Client: e.db}
	w, err := awsworld.New(e.cfg, log, e.sqs)
	if err != nil {
		t.Fatal(err)
	}
	return w, log
}

// wideInput is a run input that keeps the run view over the size up to which
// an append carries the tail of the one before (incompressible, since the run
// view is stored compressed): each append's tail is then written out as its
// own pack by the next.
var wideInput = json.RawMessage(`"` + incompressible(1000) + `"`)

// startFirstStep creates and starts run with its first step, s1, running:
// events 1-4. The run has wideInput, so its tails are not carried.
func startFirstStep(t *testing.T, w *awsworld.World, run string) {
	t.Helper()
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Input: wideInput}, worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "inc"}, worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1})
}

// listSeqs is the types of a run's events in order, checking their seqs.
func (e *env) listSeqs(t *testing.T, w *awsworld.World, runID string) string {
	t.Helper()
	var out []string
	for _, ev := range eventPages(t, w, runID, 1000) {
		if ev.Seq != int64(len(out)+1) {
			t.Fatalf("event %d has seq %d", len(out)+1, ev.Seq)
		}
		out = append(out, string(ev.Type))
	}
	return strings.Join(out, " ")
}

// eventPages reads a run's whole log through pages of limit events.
func eventPages(t *testing.T, w *awsworld.World, runID string, limit int) []worlds.Event {
	t.Helper()
	var out []worlds.Event
	f := worlds.EventFilter{Limit: limit}
	for {
		page, err := w.ListEvents(context.Background(), runID, f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Items...)
		if page.Cursor == "" {
			return out
		}
		f.Cursor = page.Cursor
	}
}

// TestStepAppendsAreOneWrite checks the append protocol of a run of steps: each
// append is one conditional put of the run view, with no transaction, and the
// writer's next append writes out what it left in the run view for good, its
// events as one pack and the step it finished as its item, beside its reads.
func TestStepAppendsAreOneWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w, log := e.loggedWorld(t)
	const run = "fast"
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Input: wideInput})
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "inc", Input: json.RawMessage(`1`)},
		worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1})
	mustAppend(t, w, run, stepEvents(2)...)
	mustAppend(t, w, run, stepEvents(3)...)
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "s3", Output: json.RawMessage(`3`)},
		worlds.Event{Type: worlds.EventRunCompleted, Output: json.RawMessage(`3`)})
	want := []string{
		"put META", "out 1", // run_created (1)
		"put META", "out 4", // run_started, s1 (2-4)
		"put META", "out 7,STEP#s1", // s1 completed, s2 (5-7)
		"put META", "out 10,STEP#s2", // s2 completed, s3 (8-10)
		"put META", // s3 completed, run_completed (11-12): held until the run expires
	}
	got := log.take()
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if seqs := e.heldEventSeqs(t, run); fmt.Sprint(seqs) != "[11 12]" {
		t.Fatalf("run view holds events %v, want [11 12]", seqs)
	}
	if got := e.openStepIDs(t, run); strings.Join(got, ",") != "s3" {
		t.Fatalf("run view holds steps %v, want the finished s3", got)
	}
	if got, want := e.listSeqs(t, w, run), "run_created run_started step_created step_started step_completed step_created step_started step_completed step_created step_started step_completed run_completed"; got != want {
		t.Fatalf("events: %s\nwant: %s", got, want)
	}
	e.checkSteps(t, run, "s1:completed", "s2:completed", "s3:completed")
	r, err := w.GetRun(context.Background(), run)
	if err != nil || r.Status != worlds.RunCompleted || r.EventCount != 12 || string(r.Output) != "3" {
		t.Fatalf("run = %+v, %v", r, err)
	}
}

// TestAppendCutShortAfterWritingOut checks an append by a World that did not
// make the one before, whose writer has not written out what it left in the
// run view: the append writes it out before its own put, and a crash between
// those puts and its own loses or doubles nothing; made again, it succeeds.
func TestAppendCutShortAfterWritingOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w, log := e.loggedWorld(t)
	const run = "cut"
	startFirstStep(t, w, run)
	mustAppend(t, w, run, stepEvents(2)...) // w would write out s1 at its next append
	if e.rawItem(t, "RUN#"+run, "STEP#s1") != nil {
		t.Fatal("s1 was written out before the writer's next append")
	}
	before := e.listSeqs(t, w, run)

	other, err := awsworld.New(e.cfg, log, e.sqs)
	if err != nil {
		t.Fatal(err)
	}
	crash := errors.New("process killed")
	log.setBefore("put META", func() error { return crash })
	if _, err := other.Append(context.Background(), run, stepEvents(3)...); !errors.Is(err, crash) {
		t.Fatalf("append = %v, want the crash", err)
	}
	// s1 and the events 5-7 were written out and are still held in the run view.
	if e.rawItem(t, "RUN#"+run, "STEP#s1") == nil || e.rawItem(t, "RUN#"+run, "EVENT#"+fmt.Sprintf("%026d", 7)) == nil {
		t.Fatal("the append did not write out what the run view held")
	}
	if got := e.heldEventSeqs(t, run); fmt.Sprint(got) != "[5 6 7]" {
		t.Fatalf("run view holds events %v after the crash, want [5 6 7]", got)
	}
	if got := e.listSeqs(t, w, run); got != before {
		t.Fatalf("events after the crash: %s\nwant: %s", got, before)
	}
	e.checkSteps(t, run, "s1:completed", "s2:running")
	mustAppend(t, other, run, stepEvents(3)...)
	if got, want := e.listSeqs(t, w, run), before+" step_completed step_created step_started"; got != want {
		t.Fatalf("events: %s\nwant: %s", got, want)
	}
	e.checkSteps(t, run, "s1:completed", "s2:completed", "s3:running")
}

// TestFastAppendLosesRace checks two writers of one run: the one whose put of
// the run view finds another append committed first plans again on top of it,
// and writes out what that append left in the run view.
func TestFastAppendLosesRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w, log := e.loggedWorld(t)
	const run = "race"
	startFirstStep(t, w, run)
	// Between w's reads and its put, the other writer completes s1 and makes s2.
	log.setBefore("put META", func() error {
		mustAppend(t, e.w, run, stepEvents(2)...)
		return nil
	})
	out, err := w.Append(context.Background(), run, worlds.Event{Type: worlds.EventSignalReceived, CorrelationID: "go", Payload: json.RawMessage(`1`)})
	if err != nil || len(out) != 1 || out[0].Seq != 8 {
		t.Fatalf("losing append = %+v, %v; want it stored as event 8", out, err)
	}
	if got, want := e.listSeqs(t, w, run), "run_created run_started step_created step_started step_completed step_created step_started signal_received"; got != want {
		t.Fatalf("events: %s\nwant: %s", got, want)
	}
	if e.rawItem(t, "RUN#"+run, "STEP#s1") == nil {
		t.Fatal("the retry did not write out the step the winner finished")
	}
	e.checkSteps(t, run, "s1:completed", "s2:running")
}

// TestListEventsWhileTailIsWrittenOut checks ListEvents when an append writes
// out the run view's tail between its read of the run view and its query of
// the event items: the page holds every event up to the count it read, from
// wherever they are, and none after.
func TestListEventsWhileTailIsWrittenOut(t *testing.T) {
	t.Parallel()
	for i, tc := range []struct {
		after      int64
		limit      int
		want       string
		wantCursor bool
	}{
		{0, 0, "1 2 3 4 5 6 7", false},
		{3, 0, "4 5 6 7", false},
		{4, 2, "5 6", true},
		{5, 0, "6 7", false}, // all in the tail: no query
		{7, 0, "", false},
	} {
		e := newEnv(t, nil)
		w, log := e.loggedWorld(t)
		run := fmt.Sprintf("list%d", i)
		startFirstStep(t, w, run)
		mustAppend(t, w, run, stepEvents(2)...)
		// Events 5-7 are the tail; the other writer moves them to a pack and
		// holds its own, 8-10.
		log.setBefore("query", func() error {
			mustAppend(t, e.w, run, stepEvents(3)...)
			return nil
		})
		page, err := w.ListEvents(context.Background(), run, worlds.EventFilter{AfterSeq: tc.after, Limit: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		var seqs []string
		for _, ev := range page.Items {
			seqs = append(seqs, fmt.Sprint(ev.Seq))
		}
		if got := strings.Join(seqs, " "); got != tc.want || (page.Cursor != "") != tc.wantCursor {
			t.Fatalf("after %d limit %d: %q cursor %q, want %q", tc.after, tc.limit, got, page.Cursor, tc.want)
		}
	}
}

// TestAppendProtocolAgainstAModel drives runs through random appends of every
// kind, single-item and transactional, some of them cut short after writing out
// what the run view held, and checks after each that the log, its pages, the
// steps and the waits are what the appends that succeeded made them.
func TestAppendProtocolAgainstAModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	for seed := uint64(1); seed <= 3; seed++ {
		w, log := e.loggedWorld(t)
		// A second World on the same log makes some appends, so the first's
		// knowledge of the run view it last wrote goes stale.
		other, err := awsworld.New(e.cfg, log, e.sqs)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 0))
		run := fmt.Sprintf("model%d", seed)
		var types []string // the log the successful appends made
		steps := map[string]string{}
		waits := map[string]worlds.WaitStatus{}
		attempts := map[string]int{}
		var order []string
		crashes, carried, duplicates := 0, 0, 0
		apply := func(evs ...worlds.Event) {
			t.Helper()
			crash := rng.IntN(5) == 0
			if crash {
				cut := errors.New("cut short")
				log.setBefore("put META", func() error { return cut })
				log.setBefore("txn", func() error { return cut })
			}
			writer := w
			if rng.IntN(4) == 0 {
				writer = other
			}
			_, err := writer.Append(ctx, run, evs...)
			if crash && err != nil {
				crashes++
			}
			log.setBefore("put META", nil)
			log.setBefore("txn", nil)
			if crash && err != nil {
				return
			}
			if err != nil {
				t.Fatalf("seed %d: append %v: %v", seed, evs[0].Type, err)
			}
			if held := e.heldEventSeqs(t, run); len(held) > 0 && held[0] <= int64(len(types)) {
				carried++ // the run view kept events of earlier appends
			}
			for _, ev := range evs {
				types = append(types, string(ev.Type))
				switch ev.Type {
				case worlds.EventStepCreated:
					steps[ev.CorrelationID] = "pending"
					order = append(order, ev.CorrelationID)
				case worlds.EventStepStarted:
					steps[ev.CorrelationID] = "running"
					attempts[ev.CorrelationID] = ev.Attempt
				case worlds.EventStepRetrying:
					steps[ev.CorrelationID] = "pending"
				case worlds.EventStepCompleted:
					steps[ev.CorrelationID] = "completed"
				case worlds.EventWaitCreated:
					waits[ev.CorrelationID] = worlds.WaitWaiting
				case worlds.EventWaitCompleted:
					waits[ev.CorrelationID] = worlds.WaitCompleted
				}
			}
		}
		check := func() {
			t.Helper()
			if got, want := e.listSeqs(t, w, run), strings.Join(types, " "); got != want {
				t.Fatalf("seed %d: events\n%s\nwant\n%s", seed, got, want)
			}
			limit := 1 + rng.IntN(4)
			var paged []string
			for _, ev := range eventPages(t, w, run, limit) {
				paged = append(paged, string(ev.Type))
			}
			if strings.Join(paged, " ") != strings.Join(types, " ") {
				t.Fatalf("seed %d: pages of %d: %v", seed, limit, paged)
			}
			var want []string
			for _, id := range order {
				want = append(want, id+":"+steps[id])
			}
			e.checkSteps(t, run, want...)
			for id, status := range waits {
				if wt, err := w.GetWait(ctx, run, id); err != nil || wt.Status != status {
					t.Fatalf("seed %d: wait %s = %+v, %v; want %s", seed, id, wt, err, status)
				}
			}
		}
		apply(worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
		for len(types) == 0 {
			apply(worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
		}
		apply(worlds.Event{Type: worlds.EventRunStarted})
		for len(types) < 2 {
			apply(worlds.Event{Type: worlds.EventRunStarted})
		}
		for i := 0; i < 40; i++ {
			var running, pending []string
			for _, id := range order {
				switch steps[id] {
				case "running":
					running = append(running, id)
				case "pending":
					pending = append(pending, id)
				}
			}
			id := fmt.Sprintf("s%d", len(order)+1)
			input := json.RawMessage(fmt.Sprint(i))
			if rng.IntN(6) == 0 { // too large to hold beside the run view
				input = json.RawMessage(`"` + incompressible(6000) + `"`)
			}
			var waiting []string
			for id, status := range waits {
				if status == worlds.WaitWaiting {
					waiting = append(waiting, id)
				}
			}
			sort.Strings(waiting)
			op := rng.IntN(9)
			if i%8 == 7 { // attributes, so every seed makes transactions too
				op = 5
			}
			switch {
			case op < 3:
				evs := []worlds.Event{{Type: worlds.EventStepCreated, CorrelationID: id, StepName: "a", Input: input},
					{Type: worlds.EventStepStarted, CorrelationID: id, Attempt: 1}}
				if len(running) > 0 {
					evs = append([]worlds.Event{{Type: worlds.EventStepCompleted, CorrelationID: running[0], Output: json.RawMessage(`1`)}}, evs...)
				}
				apply(evs...)
			case op == 3 && len(running) > 0:
				retry := e.clock.Now()
				apply(worlds.Event{Type: worlds.EventStepRetrying, CorrelationID: running[len(running)-1], Error: &worlds.ErrorInfo{Message: "again"}, RetryAt: &retry})
			case op == 4 && len(pending) > 0:
				apply(worlds.Event{Type: worlds.EventStepStarted, CorrelationID: pending[0], Attempt: attempts[pending[0]] + 1})
			case op == 5:
				apply(worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"k": fmt.Sprint(i)}})
			case op == 6:
				resume := e.clock.Now() // due at once, so it can complete in the next op
				apply(worlds.Event{Type: worlds.EventWaitCreated, CorrelationID: fmt.Sprintf("w%d", i), ResumeAt: &resume})
			case op == 7 && len(waiting) > 0:
				apply(worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: waiting[0]})
			default:
				apply(worlds.Event{Type: worlds.EventSignalReceived, CorrelationID: "go", Payload: json.RawMessage(fmt.Sprint(i))})
			}
			check()
			if i%4 == 3 && len(order) > 0 {
				// A step created again, wherever it is held, is refused.
				dup := order[rng.IntN(len(order))]
				if _, err := w.Append(ctx, run, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: dup, StepName: "a"}); !errors.Is(err, worlds.ErrStepExists) {
					t.Fatalf("seed %d: %s created again: %v, want ErrStepExists", seed, dup, err)
				}
				duplicates++
			}
		}
		kinds := map[string]int{}
		for _, w := range log.take() {
			kinds[strings.Fields(w)[0]]++
		}
		if kinds["txn"] == 0 || kinds["put"] == 0 || kinds["out"] == 0 || crashes == 0 || carried == 0 || duplicates == 0 {
			t.Fatalf("seed %d: %v writes, %d appends cut short, %d carried a tail, %d steps created again: not every path was taken", seed, kinds, crashes, carried, duplicates)
		}
		t.Logf("seed %d: %v writes, %d appends cut short, %d carried a tail, %d steps created again", seed, kinds, crashes, carried, duplicates)
	}
}

// TestWaitsLiveInTheRunView checks where a durable timer is stored: created by
// an append written as the run view alone, it is held there; completed, it is
// written out to its item by the writer's next append; and a transaction moves
// a waiting one to its item, since the run view a transaction writes holds none.
func TestWaitsLiveInTheRunView(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w, log := e.loggedWorld(t)
	ctx := context.Background()
	const run = "waits"
	startFirstStep(t, w, run)
	now := e.clock.Now()
	later := now.Add(time.Hour)
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventWaitCreated, CorrelationID: "soon", ResumeAt: &now},
		worlds.Event{Type: worlds.EventWaitCreated, CorrelationID: "later", ResumeAt: &later})
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "soon"})
	for _, kind := range log.take() {
		if kind == "txn" {
			t.Fatal("an append of waits was a transaction")
		}
	}
	if e.rawItem(t, "RUN#"+run, "WAIT#soon") != nil || e.rawItem(t, "RUN#"+run, "WAIT#later") != nil {
		t.Fatal("a wait held in the run view has an item already")
	}
	for id, want := range map[string]worlds.WaitStatus{"soon": worlds.WaitCompleted, "later": worlds.WaitWaiting} {
		if wt, err := w.GetWait(ctx, run, id); err != nil || wt.Status != want {
			t.Fatalf("wait %s = %+v, %v; want %s", id, wt, err, want)
		}
	}
	// A completion of a completed wait is refused: the run view's copy counts.
	if _, err := w.Append(ctx, run, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "soon"}); !errors.Is(err, worlds.ErrWaitCompleted) {
		t.Fatalf("second completion: %v, want ErrWaitCompleted", err)
	}

	// The next append writes the completed wait out; an attribute makes it a
	// transaction, which moves the waiting one to its item too.
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"k": "v"}})
	if item := e.rawItem(t, "RUN#"+run, "WAIT#soon"); item == nil {
		t.Fatal("the completed wait was not written out")
	}
	if item := e.rawItem(t, "RUN#"+run, "WAIT#later"); item == nil {
		t.Fatal("the transaction left the waiting wait without its item")
	}
	if data := e.viewJSON(t, run); strings.Contains(data, `"waits":[`) {
		t.Fatalf("the run view a transaction wrote still holds waits: %s", data)
	}
	e.clock.Advance(2 * time.Hour)
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventWaitCompleted, CorrelationID: "later"}) // has an item: a transaction
	if wt, err := w.GetWait(ctx, run, "later"); err != nil || wt.Status != worlds.WaitCompleted {
		t.Fatalf("wait later = %+v, %v", wt, err)
	}
	if _, err := w.GetWait(ctx, run, "never"); !errors.Is(err, worlds.ErrWaitNotFound) {
		t.Fatalf("unknown wait: %v", err)
	}
}

// TestHeldStepsStayMovable: the run view is stored compressed, so many small
// steps fit its write units, but it holds no more than a transaction can move
// out to their items beside its own actions. Otherwise an append that must be a
// transaction (here attributes) would need more than 100 actions and could
// never be written.
func TestHeldStepsStayMovable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const run = "many-open"
	mustAppend(t, e.w, run, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}, worlds.Event{Type: worlds.EventRunStarted})
	for batch := range 11 {
		var evs []worlds.Event
		for i := range 10 {
			evs = append(evs, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: fmt.Sprintf("s%d", batch*10+i), StepName: "x", Input: json.RawMessage(`1`)})
		}
		mustAppend(t, e.w, run, evs...)
		if held := e.openStepIDs(t, run); len(held) > 16 {
			t.Fatalf("after %d steps the run view holds %d", (batch+1)*10, len(held))
		}
	}
	mustAppend(t, e.w, run, worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"k": "v"}})
	page, err := e.w.ListSteps(context.Background(), run, worlds.ListFilter{Limit: 200})
	if err != nil || len(page.Items) != 110 {
		t.Fatalf("%d steps, %v", len(page.Items), err)
	}
}

// eventPacks lists a run's event items as the seqs each holds, "first-last".
func (e *env) eventPacks(t *testing.T, runID string) []string {
	t.Helper()
	var packs []string
	for _, item := range e.eventItemsOf(t, runID) {
		data, err := awsworld.DataJSON(item)
		if err != nil {
			t.Fatal(err)
		}
		var evs []worlds.Event
		if !strings.HasPrefix(data, "[") {
			data = "[" + data + "]"
		}
		if err := json.Unmarshal([]byte(data), &evs); err != nil {
			t.Fatal(err)
		}
		for i := range evs {
			if i > 0 && evs[i].Seq != evs[i-1].Seq+1 {
				t.Fatalf("event item %s holds seqs out of order: %d after %d", sk(item), evs[i].Seq, evs[i-1].Seq)
			}
		}
		if want := fmt.Sprintf("EVENT#%026d", evs[len(evs)-1].Seq); sk(item) != want {
			t.Fatalf("event item %s holds events up to %d", sk(item), evs[len(evs)-1].Seq)
		}
		packs = append(packs, fmt.Sprintf("%d-%d", evs[0].Seq, evs[len(evs)-1].Seq))
	}
	return packs
}

// TestTailsAreCarried checks the append protocol of a run of small steps: an
// append keeps the tail of the one before in the run view while the run view
// is small, so several appends' events are written out as one pack, and every
// run view stays within one write unit.
func TestTailsAreCarried(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w, log := e.loggedWorld(t)
	const run = "carried"
	startRun := []worlds.Event{{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}, {Type: worlds.EventRunStarted},
		{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "inc"}, {Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1}}
	mustAppend(t, w, run, startRun...)
	want := "run_created run_started step_created step_started"
	appends := 1
	for n := 2; n <= 30; n++ {
		mustAppend(t, w, run, stepEvents(n)...)
		appends++
		want += " step_completed step_created step_started"
		if got := e.listSeqs(t, w, run); got != want {
			t.Fatalf("after step %d: events %s\nwant %s", n, got, want)
		}
		if size := awsworld.ItemSize(e.rawItem(t, "RUN#"+run, "META")); size > 1024 {
			t.Fatalf("after step %d the run view is %d bytes", n, size)
		}
		e.checkSteps(t, run, strings.Fields(stepsUpTo(n))...)
	}
	var txns, puts, packs, stepItems int
	for _, wr := range log.take() {
		switch {
		case wr == "txn":
			txns++
		case wr == "put META":
			puts++
		default:
			for _, key := range strings.Split(strings.TrimPrefix(wr, "out "), ",") {
				if strings.HasPrefix(key, "STEP#") {
					stepItems++
				} else {
					packs++
				}
			}
		}
	}
	if txns != 0 || puts != appends {
		t.Fatalf("%d transactions and %d puts of the run view for %d appends", txns, puts, appends)
	}
	// Each written out pack holds the events of several appends.
	written := e.eventPacks(t, run)
	if packs == 0 || packs > appends/2 || len(written) != packs {
		t.Fatalf("%d packs written out for %d appends, stored %v", packs, appends, written)
	}
	t.Logf("%d appends: event items %v", appends, written)
	held := e.heldEventSeqs(t, run)
	if got, want := fmt.Sprint(written[len(written)-1]), fmt.Sprintf("-%d", held[0]-1); !strings.HasSuffix(got, want) {
		t.Fatalf("packs %v, and the run view holds %v", written, held)
	}
	// A finished step is rebuilt from the tail while the tail holds its
	// creation (seq 3n for sn), and written to its item, once, when the tail is
	// written out.
	items := 0
	for n := 1; n <= 30; n++ {
		item := e.rawItem(t, "RUN#"+run, fmt.Sprintf("STEP#s%d", n))
		if want := n < 30 && int64(3*n) < held[0]; (item != nil) != want {
			t.Fatalf("s%d (created at %d, run view holds events from %d) has an item: %v, want %v", n, 3*n, held[0], item != nil, want)
		}
		if item != nil {
			items++
		}
	}
	if stepItems != items || items == 29 {
		t.Fatalf("%d step items written, %d stored, of 29 finished steps", stepItems, items)
	}
	t.Logf("%d of 29 finished steps written to their items", items)
}

// stepsUpTo is the checkSteps listing of steps s1..sn, the last one running.
func stepsUpTo(n int) string {
	var out []string
	for i := 1; i < n; i++ {
		out = append(out, fmt.Sprintf("s%d:completed", i))
	}
	return strings.Join(append(out, fmt.Sprintf("s%d:running", n)), " ")
}

// TestNestedPacksFromARace: a writer that must write a transaction writes out
// the run view's tail first; if it then loses the race to an append that
// carried the same tail on, the tail is later written out again inside a
// longer pack. The log reads each event once.
func TestNestedPacksFromARace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	w, log := e.loggedWorld(t)
	const run = "nested"
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"}, worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "inc"}, worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1})
	mustAppend(t, e.w, run, stepEvents(2)...)
	if seqs := e.heldEventSeqs(t, run); len(seqs) == 0 || seqs[0] != 1 {
		t.Fatalf("run view holds %v, want the carried tail from 1", seqs)
	}
	// w's attributes are a transaction: it writes out the tail (1-7), then the
	// other writer carries that tail on and wins.
	log.setBefore("txn", func() error {
		mustAppend(t, e.w, run, stepEvents(3)...)
		return nil
	})
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"k": "v"}})
	packs := e.eventPacks(t, run)
	if len(packs) < 2 || packs[0] != "1-7" || !strings.HasPrefix(packs[1], "1-") {
		t.Fatalf("event items %v, want 1-7 and a longer one from 1", packs)
	}
	want := "run_created run_started step_created step_started step_completed step_created step_started step_completed step_created step_started attributes_set"
	if got := e.listSeqs(t, w, run); got != want {
		t.Fatalf("events: %s\nwant: %s", got, want)
	}
	for limit := 1; limit <= 11; limit++ {
		var seqs []int64
		for _, ev := range eventPages(t, w, run, limit) {
			seqs = append(seqs, ev.Seq)
		}
		if len(seqs) != 11 || seqs[10] != 11 {
			t.Fatalf("pages of %d: %v", limit, seqs)
		}
	}
}

// TestRunWrittenUncompressedContinues: a run whose run view and event items
// hold their data as JSON strings, as versions before compression wrote them,
// reads and continues unchanged.
func TestRunWrittenUncompressedContinues(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	const run = "uncompressed"
	startFirstStep(t, e.w, run)
	mustAppend(t, e.w, run, stepEvents(2)...)
	mustAppend(t, e.w, run, stepEvents(3)...)
	before := e.listSeqs(t, e.w, run)
	out, err := e.db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(e.cfg.TableName), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk"), ExpressionAttributeValues: map[string]ddbAttr{":pk": ddbS("RUN#" + run)}})
	if err != nil {
		t.Fatal(err)
	}
	rewritten := 0
	for _, item := range out.Items {
		if _, ok := item["data"].(*ddbtypes.AttributeValueMemberB); !ok {
			continue
		}
		data, err := awsworld.DataJSON(item)
		if err != nil {
			t.Fatal(err)
		}
		item["data"] = ddbS(data)
		if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.cfg.TableName, Item: item}); err != nil {
			t.Fatal(err)
		}
		rewritten++
	}
	if rewritten < 2 {
		t.Fatalf("%d items held compressed data, want the run view and event items", rewritten)
	}
	// A World that has not written this run reads it from the table alone.
	w, err := awsworld.New(e.cfg, e.db, e.sqs)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.listSeqs(t, w, run); got != before {
		t.Fatalf("events: %s\nwant: %s", got, before)
	}
	e.checkSteps(t, run, "s1:completed", "s2:completed", "s3:running")
	mustAppend(t, w, run, stepEvents(4)...)
	mustAppend(t, w, run, worlds.Event{Type: worlds.EventStepCompleted, CorrelationID: "s4", Output: json.RawMessage(`4`)},
		worlds.Event{Type: worlds.EventRunCompleted, Output: json.RawMessage(`4`)})
	if got, want := e.listSeqs(t, w, run), before+" step_completed step_created step_started step_completed run_completed"; got != want {
		t.Fatalf("events: %s\nwant: %s", got, want)
	}
	e.checkSteps(t, run, "s1:completed", "s2:completed", "s3:completed", "s4:completed")
}

// resendingDB plays the SDK's retry of a put whose answer was lost: the first
// conditional put of the run view commits, between runs (another writer
// appending), then the same put is sent again and its failed condition is the
// answer.
type resendingDB struct {
	*dynamodb.Client
	once    sync.Once
	between func()
}

func (d *resendingDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := d.Client.PutItem(ctx, in, opts...)
	if err != nil || in.ConditionExpression == nil || sk(in.Item) != "META" {
		return out, err
	}
	resend := false
	d.once.Do(func() { resend = true })
	if !resend {
		return out, err
	}
	d.between()
	return d.Client.PutItem(ctx, in, opts...)
}

// TestResentPutAfterAnotherAppendCommitsOnce: a single-put append whose answer
// was lost and whose second sending fails its condition because other writers
// appended in between, whether they carried its events on, wrote them out, or
// appended in a transaction, is reported committed and is in the log once.
func TestResentPutAfterAnotherAppendCommitsOnce(t *testing.T) {
	t.Parallel()
	signal := func(s string) worlds.Event {
		return worlds.Event{Type: worlds.EventSignalReceived, CorrelationID: "go", Payload: json.RawMessage(strconv.Quote(s))}
	}
	for _, tc := range []struct {
		name  string
		input json.RawMessage
		other [][]worlds.Event
	}{
		{"carried", nil, [][]worlds.Event{{signal("other")}}},
		{"written out", wideInput, [][]worlds.Event{{signal("other")}, {signal("third")}}},
		{"transaction", nil, [][]worlds.Event{{{Type: worlds.EventAttributesSet, Attributes: map[string]string{"k": "v"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			const run = "resent"
			db := &resendingDB{Client: e.db, between: func() {
				for _, evs := range tc.other {
					mustAppend(t, e.w, run, evs...)
				}
			}}
			mustAppend(t, e.w, run, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Input: tc.input}, worlds.Event{Type: worlds.EventRunStarted})
			w, err := awsworld.New(e.cfg, db, e.sqs)
			if err != nil {
				t.Fatal(err)
			}
			out, err := w.Append(context.Background(), run, signal("mine"))
			if err != nil || len(out) != 1 || out[0].Seq != 3 {
				t.Fatalf("append = %+v, %v; want it committed at seq 3", out, err)
			}
			var got []string
			for _, ev := range eventPages(t, e.w, run, 1000) {
				got = append(got, fmt.Sprintf("%d:%s%s", ev.Seq, ev.Type, ev.Payload))
			}
			want := []string{"1:run_created", "2:run_started", `3:signal_received"mine"`}
			for i, evs := range tc.other {
				for _, ev := range evs {
					want = append(want, fmt.Sprintf("%d:%s%s", 4+i, ev.Type, ev.Payload))
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("log %v\nwant %v", got, want)
			}
		})
	}
}

// stepReads counts the STEP# items an append's reads ask DynamoDB for.
type stepReads struct {
	*dynamodb.Client
	n atomic.Int64
}

func (d *stepReads) count(keys []map[string]ddbAttr) {
	for _, k := range keys {
		if strings.HasPrefix(sk(k), "STEP#") {
			d.n.Add(1)
		}
	}
}

func (d *stepReads) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	for _, ka := range in.RequestItems {
		d.count(ka.Keys)
	}
	return d.Client.BatchGetItem(ctx, in, opts...)
}

func (d *stepReads) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.count([]map[string]ddbAttr{in.Key})
	return d.Client.GetItem(ctx, in, opts...)
}

// TestCompleteRunViewSkipsStepReads: while no run view of a run has left a
// step out, the run view holds every step there is, so creating a step reads
// no item; a second creation of a step is refused all the same: while the run
// view is complete, once a run view has left a finished step out (its tail
// not carried), and after a transaction moved the steps to their items.
func TestCompleteRunViewSkipsStepReads(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		input json.RawMessage
	}{{"carried", nil}, {"written out", wideInput}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			db := &stepReads{Client: e.db}
			w, err := awsworld.New(e.cfg, db, e.sqs)
			if err != nil {
				t.Fatal(err)
			}
			const run = "complete"
			mustAppend(t, w, run, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Input: tc.input}, worlds.Event{Type: worlds.EventRunStarted})
			mustAppend(t, w, run, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "inc"}, worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1})
			db.n.Store(0)
			for n := 2; n <= 5; n++ {
				mustAppend(t, w, run, stepEvents(n)...)
			}
			again := func(id string) {
				t.Helper()
				_, err := w.Append(context.Background(), run, worlds.Event{Type: worlds.EventStepCreated, CorrelationID: id, StepName: "inc"})
				if !errors.Is(err, worlds.ErrStepExists) {
					t.Fatalf("creating %s again: %v, want ErrStepExists", id, err)
				}
			}
			again("s1")
			again("s5")
			if got := db.n.Load(); (got == 0) != (tc.input == nil) {
				t.Fatalf("4 step appends and 2 refused ones read %d step items", got)
			}
			// A transaction moves the run view's steps out; from then on step
			// items are read, and existing steps are found there.
			mustAppend(t, w, run, worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"k": "v"}})
			if e.rawItem(t, "RUN#"+run, "STEP#s2") == nil {
				t.Fatal("s2 has no item after the transaction")
			}
			again("s2")
			db.n.Store(0)
			mustAppend(t, w, run, stepEvents(6)...)
			if db.n.Load() == 0 {
				t.Fatal("a step created after a transaction read no step item")
			}
			e.checkSteps(t, run, strings.Fields(stepsUpTo(6))...)
		})
	}
}
