package awsworld

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// conflictDB serves one running run and cancels the first `conflicts`
// transactions on the event-count condition, as a concurrent writer would.
type conflictDB struct {
	DynamoDBAPI
	mu        sync.Mutex
	conflicts int
	txns      []*dynamodb.TransactWriteItemsInput
}

func (f *conflictDB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	run := &worlds.Run{RunID: "r", WorkflowName: "wf", Status: worlds.RunRunning, EventCount: 2, CreatedAt: time.Unix(0, 0)}
	return &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{"t": {(&World{shards: DefaultListShards}).runItem(run, nil)}}}, nil
}

// UpdateItem answers the World's record of its list shards.
func (f *conflictDB) UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return &dynamodb.UpdateItemOutput{}, nil
}

func (f *conflictDB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.txns = append(f.txns, in)
	if len(f.txns) <= f.conflicts {
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		for i := range reasons {
			reasons[i].Code = aws.String("None")
		}
		reasons[len(reasons)-1].Code = aws.String("ConditionalCheckFailed") // the run view is last
		return nil, &types.TransactionCanceledException{Message: aws.String("cancelled"), CancellationReasons: reasons}
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

func TestAppendRetriesLostRaceWithBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		conflicts int
		wantErr   error
	}{{0, nil}, {3, nil}, {maxAppendAttempts, worlds.ErrAppendContention}} {
		db := &conflictDB{conflicts: tc.conflicts}
		w, err := New(validConfig(), db, &fakeSQS{})
		if err != nil {
			t.Fatal(err)
		}
		var sleeps []time.Duration
		w.sleep = func(_ context.Context, d time.Duration) error { sleeps = append(sleeps, d); return nil }
		out, err := w.Append(context.Background(), "r", worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"k": "v"}})
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
			t.Fatalf("%d conflicts: err = %v, want %v", tc.conflicts, err, tc.wantErr)
		}
		wantTxns := min(tc.conflicts+1, maxAppendAttempts)
		if len(db.txns) != wantTxns || len(sleeps) != min(tc.conflicts, maxAppendAttempts) {
			t.Fatalf("%d conflicts: %d transactions, %d sleeps", tc.conflicts, len(db.txns), len(sleeps))
		}
		for i, d := range sleeps {
			if d <= 0 || d > time.Second || d > 10*time.Millisecond<<min(i, 7) {
				t.Fatalf("sleep %d = %v, outside the jitter ceiling", i, d)
			}
		}
		if tc.wantErr == nil {
			if out[0].Seq != 3 {
				t.Fatalf("stored seq %d, want 3", out[0].Seq)
			}
			// The run view is guarded by the count read: 2.
			last := db.txns[len(db.txns)-1].TransactItems
			put := last[len(last)-1].Put
			if aws.ToString(put.ConditionExpression) != "#c = :c" || put.ExpressionAttributeValues[":c"].(*types.AttributeValueMemberN).Value != "2" {
				t.Fatalf("run view condition %q %v", aws.ToString(put.ConditionExpression), put.ExpressionAttributeValues)
			}
		}
	}
}

func TestAppendRejectsNonRetryableCancellation(t *testing.T) {
	t.Parallel()
	db := &validationDB{}
	w, err := New(validConfig(), db, &fakeSQS{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Append(context.Background(), "r", worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"k": "v"}})
	if !errors.Is(err, worlds.ErrEventInvalid) || !errors.Is(err, worlds.ErrItemTooLarge) {
		t.Fatalf("DynamoDB's item-size rejection: %v, want ErrItemTooLarge", err)
	}
}

type validationDB struct{ conflictDB }

func (f *validationDB) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return nil, errors.New("api error ValidationException: Item size has exceeded the maximum allowed size")
}

// movedStepDB serves a run whose step s1 has an item of its own. With moved,
// another writer completes s1 between the prefetch's read of the run view
// (event count 4) and its read of the step's item, so the item is newer than
// the run view; every later read of the run view sees that append (count 5).
type movedStepDB struct {
	conflictDB
	moved    bool // false: nothing changes, the step is completed throughout
	batchGet int
	runReads int
}

func (f *movedStepDB) run(count int64) map[string]types.AttributeValue {
	run := &worlds.Run{RunID: "r", WorkflowName: "wf", Status: worlds.RunRunning, EventCount: count, CreatedAt: time.Unix(0, 0)}
	return (&World{shards: DefaultListShards}).runItem(run, nil)
}

func (f *movedStepDB) count() int64 {
	if f.moved && f.batchGet+f.runReads > 1 {
		return 5
	}
	return 4
}

func (f *movedStepDB) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	item := f.run(f.count())
	f.batchGet++
	return &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{"t": {item}}}, nil
}

func (f *movedStepDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if getS(in.Key, attrSK) == metaSK {
		f.runReads++
		return &dynamodb.GetItemOutput{Item: f.run(f.count())}, nil
	}
	step := key(runPK("r"), stepSK("s1"))
	step[attrData] = encodeData(&worlds.Step{RunID: "r", StepID: "s1", StepName: "a", Status: worlds.StepCompleted, Attempt: 1})
	step[attrSeq] = n(3)
	return &dynamodb.GetItemOutput{Item: step}, nil
}

func TestAppendReplansWhenItsReadsDisagree(t *testing.T) {
	t.Parallel()
	for _, moved := range []bool{true, false} {
		db := &movedStepDB{moved: moved}
		w, err := New(validConfig(), db, &fakeSQS{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.Append(context.Background(), "r", worlds.Event{Type: worlds.EventStepHeartbeat, CorrelationID: "s1", Attempt: 1})
		// A heartbeat of a completed step is refused either way; the question is
		// whether it was refused on reads that disagreed.
		if !errors.Is(err, worlds.ErrStepFinished) || len(db.txns) != 0 {
			t.Fatalf("moved %v: err = %v after %d transactions, want ErrStepFinished after none", moved, err, len(db.txns))
		}
		if want := map[bool]int{true: 2, false: 1}[moved]; db.batchGet != want {
			t.Fatalf("moved %v: planned on %d prefetches, want %d", moved, db.batchGet, want)
		}
	}
}

// finishingStepDB serves GetStep's reads while step s1 finishes: the batch
// read finds neither its item (read before the move) nor it in the run view
// (read after), and the item exists from then on.
type finishingStepDB struct {
	movedStepDB
	stepReads int
}

func (f *finishingStepDB) BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{"t": {f.run(5)}}}, nil
}

func (f *finishingStepDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	f.stepReads++
	step := key(runPK("r"), stepSK("s1"))
	step[attrData] = encodeData(&worlds.Step{RunID: "r", StepID: "s1", StepName: "a", Status: worlds.StepCompleted, Attempt: 1})
	return &dynamodb.GetItemOutput{Item: step}, nil
}

func TestGetStepFindsAStepThatFinishedDuringItsReads(t *testing.T) {
	t.Parallel()
	db := &finishingStepDB{}
	w, err := New(validConfig(), db, &fakeSQS{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := w.GetStep(context.Background(), "r", "s1")
	if err != nil || st.Status != worlds.StepCompleted || db.stepReads != 1 {
		t.Fatalf("GetStep = %+v, %v after %d reads of the item; want the completed step after 1", st, err, db.stepReads)
	}
}

// resentPutDB answers the first conditional put of the run view with a failed
// condition and the item as stored: the put itself (own), as when the SDK
// sends a committed put again, or another writer's (other).
type resentPutDB struct {
	conflictDB
	own  bool
	puts []*dynamodb.PutItemInput
}

func (f *resentPutDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in.ConditionExpression == nil { // an item written out of the run view
		return &dynamodb.PutItemOutput{}, nil
	}
	f.puts = append(f.puts, in)
	if len(f.puts) > 1 {
		return &dynamodb.PutItemOutput{}, nil
	}
	stored := in.Item
	if !f.own {
		stored = otherView()
	}
	return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed"), Item: stored}
}

// GetItem serves the other writer's run view, which ListEvents reads.
func (f *resentPutDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: otherView()}, nil
}

// otherView is the run view another writer's append left at seq 3: a signal
// of its own in its tail.
func otherView() map[string]types.AttributeValue {
	run := &worlds.Run{RunID: "r", WorkflowName: "wf", Status: worlds.RunRunning, EventCount: 3, CreatedAt: time.Unix(0, 0)}
	item := (&World{shards: DefaultListShards}).runItem(run, nil)
	ev := worlds.Event{RunID: "r", Seq: 3, Type: worlds.EventSignalReceived, CorrelationID: "go", CreatedAt: time.Unix(1, 0)}
	item[attrData] = compressData(heldJSON(getS(item, attrData), nil, nil, []string{encodeData(ev).(*types.AttributeValueMemberS).Value}, false))
	return item
}

func TestRunViewPutSentAgainCommitsOnce(t *testing.T) {
	t.Parallel()
	for _, own := range []bool{true, false} {
		db := &resentPutDB{own: own}
		w, err := New(validConfig(), db, &fakeSQS{})
		if err != nil {
			t.Fatal(err)
		}
		w.sleep = func(context.Context, time.Duration) error { return nil }
		out, err := w.Append(context.Background(), "r", worlds.Event{Type: worlds.EventSignalReceived, CorrelationID: "go"})
		if err != nil || len(out) != 1 || out[0].Seq != 3 {
			t.Fatalf("own %v: append = %+v, %v", own, out, err)
		}
		if want := map[bool]int{true: 1, false: 2}[own]; len(db.puts) != want {
			t.Fatalf("own %v: %d puts of the run view, want %d (a failed condition on its own put is a commit; on another's, a retry)", own, len(db.puts), want)
		}
		if v := db.puts[0].ReturnValuesOnConditionCheckFailure; v != types.ReturnValuesOnConditionCheckFailureAllOld {
			t.Fatalf("the put does not ask for the stored item on a failed condition: %q", v)
		}
		if len(db.txns) != 0 {
			t.Fatalf("own %v: %d transactions for a signal", own, len(db.txns))
		}
	}
}
