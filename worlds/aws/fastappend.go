package awsworld

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// An append that changes only its run's events, steps already held in the run
// view (or created by it) and the run view itself can be written as one
// conditional PutItem of the run view, guarded by the event count like the run
// view's put in a transaction. The run view then holds the append's events (its
// tail) and every step it changed. A single-item write is billed one unit per
// KB where a transaction bills two for each of its items, so a step's usual
// append (its predecessor's outcome, its creation and start) costs 1 unit for
// the run view (under 1 KB compressed). Its events are carried on in the run
// view by the next appends while it stays small (see carries), and the steps
// created among them are rebuilt from them, not stored twice; once the tail
// leaves the run view it is written out as one pack of 1 unit for several
// appends, and each of its finished steps as its item, 1 unit: under 2 units a
// step where a transaction costs 6.
//
// The finished steps, and the tail unless the next append carries it, are
// written out by the writer's next append to the run, beside its reads (unless
// the run has ended: they stay in the run view until it expires), and before
// its write by any append that does not know them to be written (flushHeld):
// after a crash, or when another World made the append before. They are
// committed and immutable, so a plain put is safe whoever makes it and however
// often: a writer that loses the race to append has
// written what the winner writes too. Writing them out beside the reads keeps
// them off a step's path (a step costs two round trips, the reads and the put)
// and out of the window between an append's reads and its write, where they
// would widen races between writers of one run. A crash between those puts and the append's own
// write leaves data that is also in the run view; readers take either copy. A
// writer stalled between its read and those puts for longer than it takes the
// run to finish and expire leaves a copy in the run's deleted partition, which
// no reader returns without the run view.
//
// A tail written out by a writer that then loses the race to an append that
// carried the same tail on is written out again, later, inside a longer pack
// keyed by its own last seq. Tails grow only from the same first seq, so two
// packs either share their first seq or hold no seq in common, and the first
// pack keyed at or after a seq holds it; ListEvents keeps one copy of each
// event.
//
// Appends that touch hooks, tokens, attributes, or a step or wait with an item
// of its own stay transactions. So does an append whose run view would exceed
// fastViewMax, or cost more than the transaction: unfinished steps are written
// again by every append that holds them, so a run with many of them moves them
// to their items in a transaction rather than carry them in a large run view.

// fastViewMax bounds the run view of a single-item append: at 4 write units, it
// costs no more than the smallest transaction (the run view and one event item,
// 2 units each).
const fastViewMax = 4 * 1024

// The run view is stored compressed, so fastViewMax alone would let it hold
// far more than it did uncompressed. Two more bounds keep what a transaction
// must move out of it within one transaction (100 actions, beside the append's
// own), and what every append to the run inflates and compresses again small:
// heldMax steps and waits, and fastViewDataMax bytes of JSON.
const (
	heldMax         = 16
	fastViewDataMax = 32 * 1024
)

// fastView returns the run view a single-item append writes, what it costs in
// write units, counting the pack of its tail and the items of the steps it
// finished, written out later, and the state it leaves; nil when the append
// must be a transaction.
func (w *World) fastView(st runState, effects []worlds.Effect) (map[string]types.AttributeValue, int, runState) {
	last := effects[len(effects)-1].Run
	if len(w.attrActions(st.run, &last)) > 0 {
		return nil, 0, runState{}
	}
	// Finished steps and completed waits the run view held are written out by
	// flushHeld, except the steps rebuilt from a tail this append carries on;
	// the rest stay.
	next := held{open: make(map[string]openStep, len(st.open)+1), waits: map[string]worlds.Wait{}}
	next.complete = st.run == nil || st.complete
	for id, o := range st.open {
		if !o.Step.Status.Terminal() || (st.carry && inTail(o.Seq, st.tail)) {
			next.open[id] = o
		} else {
			next.complete = false
		}
	}
	for id, wt := range st.waits {
		if wt.Status != worlds.WaitCompleted {
			next.waits[id] = wt
		}
	}
	events := make([]string, 0, len(st.tail)+len(effects))
	if st.carry {
		for _, ev := range st.tail {
			events = append(events, encodeData(ev).(*types.AttributeValueMemberS).Value)
			next.tail = append(next.tail, ev)
		}
	}
	for i := range effects {
		eff := &effects[i]
		if eff.Hook != nil || len(eff.DisposedHooks) > 0 || eff.ClaimToken != "" || len(eff.ReleaseTokens) > 0 {
			return nil, 0, runState{}
		}
		// A step or wait with an item of its own is changed only by a transaction.
		if eff.Step != nil {
			id := eff.Step.StepID
			o, ok := next.open[id]
			switch {
			case eff.Event.Type == worlds.EventStepCreated:
				o = openStep{Seq: eff.Event.Seq}
			case !ok:
				return nil, 0, runState{}
			}
			o.Step = *eff.Step
			next.open[id] = o
		}
		if eff.Wait != nil {
			if _, ok := next.waits[eff.Wait.WaitID]; !ok && eff.Event.Type != worlds.EventWaitCreated {
				return nil, 0, runState{}
			}
			next.waits[eff.Wait.WaitID] = *eff.Wait
		}
		events = append(events, encodeData(eff.Event).(*types.AttributeValueMemberS).Value)
		next.tail = append(next.tail, eff.Event)
	}
	pack, err := tailPack(next.tail)
	if err != nil || pack == nil {
		return nil, 0, runState{}
	}
	units := writeUnits(itemSize(pack))
	steps := make([]openStep, 0, len(next.open))
	unfinished := 0 // rebuilt from the tail, so not listed, but held all the same
	for _, o := range next.open {
		derived := inTail(o.Seq, next.tail)
		if o.Step.Status.Terminal() {
			// The run view holds it compressed; its item, written out later, must
			// fit uncompressed. The transaction reports the one that does not.
			size := itemSize(stepItem(o))
			if size > maxItemBytes {
				return nil, 0, runState{}
			}
			if !derived { // else written out with the tail, in its pack's stead
				units += writeUnits(size)
			}
		} else if derived {
			unfinished++
		}
		if !derived {
			steps = append(steps, o)
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].Seq < steps[j].Seq })
	encodedSteps := make([]string, len(steps))
	for i, o := range steps {
		encodedSteps[i] = marshalOpen(o)
	}
	var encodedWaits []string
	for _, id := range slices.Sorted(maps.Keys(next.waits)) {
		wt := next.waits[id]
		if wt.Status == worlds.WaitCompleted {
			units += writeUnits(itemSize(waitItem(&wt)))
		}
		encodedWaits = append(encodedWaits, encodeData(&wt).(*types.AttributeValueMemberS).Value)
	}
	if len(encodedSteps)+unfinished+len(encodedWaits) > heldMax {
		return nil, 0, runState{}
	}
	meta := w.runItem(&last, st.hookIDs)
	data := heldJSON(getS(meta, attrData), encodedSteps, encodedWaits, events, next.complete)
	if len(data) > fastViewDataMax {
		return nil, 0, runState{}
	}
	meta[attrData] = compressData(data)
	meta[attrAppendID] = s(randomID()[:16])
	next.carry = carries(meta, &last, next.tail)
	return meta, units + writeUnits(itemSize(meta)), runState{run: &last, hookIDs: st.hookIDs, held: next}
}

// writeUnits is what DynamoDB bills for writing an item of size bytes outside a
// transaction.
func writeUnits(size int) int { return max(1, (size+1023)/1024) }

// txnUnits is what a transaction of actions costs: two units per KB of each item.
func txnUnits(actions []types.TransactWriteItem) int {
	units := 0
	for _, a := range actions {
		switch {
		case a.Put != nil:
			units += 2 * writeUnits(itemSize(a.Put.Item))
		case a.Update != nil:
			size := 0
			for _, v := range a.Update.ExpressionAttributeValues {
				size += attrSize(v)
			}
			units += 2 * writeUnits(size+200)
		default:
			units += 2
		}
	}
	return units
}

// waitItem is the WAIT# item of a wait.
func waitItem(wt *worlds.Wait) map[string]types.AttributeValue {
	item := key(runPK(wt.RunID), waitSK(wt.WaitID))
	item[attrData] = encodeData(wt)
	return item
}

// stepItem is the STEP# item of a step.
func stepItem(o openStep) map[string]types.AttributeValue {
	item := key(runPK(o.Step.RunID), stepSK(o.Step.StepID))
	item[attrData] = encodeData(&o.Step)
	item[attrSeq] = n(o.Seq)
	return item
}

// tailPack is the event item of a run view's tail: what a transaction would have
// written for the same append when its events fit one item. It is nil for no tail.
func tailPack(tail []worlds.Event) (map[string]types.AttributeValue, error) {
	if len(tail) == 0 {
		return nil, nil
	}
	effects := make([]worlds.Effect, len(tail))
	for i := range tail {
		effects[i].Event = tail[i]
	}
	items, err := eventItems(effects)
	if err != nil {
		return nil, err
	}
	if len(items) != 1 { // a run view's tail fits one item: fastView checks it
		return nil, fmt.Errorf("awsworld: tail of run %s needs %d event items", tail[0].RunID, len(items))
	}
	return items[0], nil
}

// writtenOutMax bounds the keys a World remembers as written out.
const writtenOutMax = 4096

// writtenOut is the set of items a World has written out, the most recent
// writtenOutMax of them, so it does not put them again. Forgetting one costs a
// put of the same item once more.
type writtenOut struct {
	mu   sync.Mutex
	keys map[string]bool
	ring []string
	next int
}

func (c *writtenOut) has(k string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keys[k]
}

func (c *writtenOut) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.keys = make(map[string]bool, writtenOutMax)
		c.ring = make([]string, writtenOutMax)
	}
	if c.keys[k] {
		return
	}
	delete(c.keys, c.ring[c.next])
	c.ring[c.next] = k
	c.keys[k] = true
	c.next = (c.next + 1) % writtenOutMax
}

// pendingMax bounds the runs a World keeps pending write-outs for; forgetting
// them leaves them to the next append's flushHeld.
const pendingMax = 1024

// pendingOut holds, by run, the state this World's last single-item append to
// the run left, whose tail and finished steps its next append writes out.
type pendingOut struct {
	mu sync.Mutex
	m  map[string]runState
}

func (p *pendingOut) put(runID string, st runState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= pendingMax {
		p.m = make(map[string]runState)
	}
	p.m[runID] = st
}

func (p *pendingOut) take(runID string) (runState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.m[runID]
	delete(p.m, runID)
	return st, ok
}

// flushHeld writes out what the run view of st holds for good: its tail as an
// event pack and its finished steps and completed waits as their items,
// skipping the ones this World has written out already. With withTail false
// the append carries the tail on, and the finished steps rebuilt from it stay
// with it.
func (w *World) flushHeld(ctx context.Context, st runState, withTail bool) error {
	var items []map[string]types.AttributeValue
	if withTail {
		pack, err := tailPack(st.tail)
		if err != nil {
			return err
		}
		if pack != nil {
			items = append(items, pack)
		}
	}
	for _, o := range st.open {
		// A step rebuilt from a tail that stays is written out with the tail.
		if o.Step.Status.Terminal() && (withTail || !inTail(o.Seq, st.tail)) {
			items = append(items, stepItem(o))
		}
	}
	for _, wt := range st.waits {
		if wt.Status == worlds.WaitCompleted {
			items = append(items, waitItem(&wt))
		}
	}
	var todo []map[string]types.AttributeValue
	for _, item := range items {
		if !w.written.has(itemKey(getS(item, attrPK), getS(item, attrSK))) {
			todo = append(todo, item)
		}
	}
	// One PutItem each, side by side: the roles the Terraform module grants do
	// not include BatchWriteItem, which deletes without conditions.
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, item := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: w.table, Item: item}); err != nil {
				errs[i] = fmt.Errorf("awsworld: write out %s/%s: %w", getS(item, attrPK), getS(item, attrSK), err)
				return
			}
			w.written.add(itemKey(getS(item, attrPK), getS(item, attrSK)))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// putView writes a single-item append's run view, guarded like the run view of
// a transaction. It reports a lost race as retryable.
//
// A transaction the SDK sends again after losing its answer carries the same
// ClientRequestToken, so DynamoDB answers it as the first time; a PutItem has no
// such token, and its second sending fails the condition its first one changed.
// So a failed condition is checked against the item DynamoDB returns with it: if
// that is this very run view (the random append_id the put carries), the append
// committed. Other writers may have appended after it before the second sending
// arrived (the SDK backs off before it resends), so a run view that has moved
// past the append's events is checked too: the log holds the append's events at
// their seqs exactly when the put committed, since events never change once
// written (see landedAt).
func (w *World) putView(ctx context.Context, st runState, meta map[string]types.AttributeValue, events []worlds.Event) (retry bool, err error) {
	in := &dynamodb.PutItemInput{TableName: w.table, Item: meta,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
	if st.run == nil {
		in.ConditionExpression = aws.String("attribute_not_exists(pk)")
	} else {
		in.ConditionExpression = aws.String("#c = :c")
		in.ExpressionAttributeNames = map[string]string{"#c": attrCount}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":c": n(st.run.EventCount)}
	}
	_, err = w.db.PutItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	var tc *types.TransactionConflictException
	if errors.As(err, &ccf) && ccf.Item != nil {
		if getS(ccf.Item, attrAppendID) == getS(meta, attrAppendID) {
			return false, nil
		}
		landed, lerr := w.landedAt(ctx, ccf.Item, events)
		if lerr != nil {
			// Retrying could append the events twice, so the caller hears what
			// it hears after a lost answer: the append may have committed.
			return false, fmt.Errorf("awsworld: append to run %s failed its condition and whether an earlier sending committed it is unknown: %w", events[0].RunID, errors.Join(err, lerr))
		}
		if landed {
			return false, nil
		}
	}
	if errors.As(err, &ccf) || errors.As(err, &tc) {
		return true, err
	}
	if err != nil && (strings.Contains(err.Error(), "Item size") || strings.Contains(err.Error(), "size has exceeded")) {
		last, _, _ := decodeRunData(meta)
		return false, &worlds.EventError{Kind: worlds.ErrEventInvalid, Cause: worlds.ErrItemTooLarge, RunID: last.RunID, Reason: err.Error()}
	}
	if err != nil {
		return false, fmt.Errorf("awsworld: append to run %s: %w", getS(meta, attrPK)[len("RUN#"):], err)
	}
	return false, nil
}

// landedAt reports whether the log of the run whose current run view is stored
// holds events, the planned events of one append, at their seqs. Seqs are
// handed out under the run view's condition and events are immutable, so the
// same events at the same seqs, to the nanosecond of their creation time, are
// the append's own: another writer's append at those seqs differs at least in
// its creation time or content, and when it does not the log is the same
// either way.
func (w *World) landedAt(ctx context.Context, stored map[string]types.AttributeValue, events []worlds.Event) (bool, error) {
	first, last := events[0].Seq, events[len(events)-1].Seq
	if getN(stored, attrCount) < last {
		return false, nil
	}
	// A lost race usually leaves the seqs in the returned run view's tail.
	var logged []worlds.Event
	if st, err := decodeRun(stored); err == nil && len(st.tail) > 0 && st.tail[0].Seq <= first {
		logged = st.tail[first-st.tail[0].Seq:]
	} else {
		page, err := w.ListEvents(ctx, events[0].RunID, worlds.EventFilter{AfterSeq: first - 1, Limit: len(events)})
		if err != nil {
			return false, err
		}
		logged = page.Items
	}
	if len(logged) < len(events) {
		return false, fmt.Errorf("awsworld: run %s: %d events after seq %d, want %d", events[0].RunID, len(logged), first-1, len(events))
	}
	for i := range events {
		same, err := sameEvent(events[i], logged[i])
		if err != nil || !same {
			return false, err
		}
	}
	return true, nil
}

// sameEvent reports whether planned, once stored and read back, is read.
func sameEvent(planned, read worlds.Event) (bool, error) {
	a, err := json.Marshal(planned)
	if err != nil {
		return false, err
	}
	var back worlds.Event
	if err := json.Unmarshal(a, &back); err != nil {
		return false, err
	}
	if a, err = json.Marshal(back); err != nil {
		return false, err
	}
	b, err := json.Marshal(read)
	return err == nil && bytes.Equal(a, b), err
}
