package awsworld

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

// ErrTooManyActions is returned for an append that would need more than the 100
// actions of one DynamoDB transaction. Split the events over several appends.
var ErrTooManyActions = fmt.Errorf("awsworld: append needs more than %d transaction actions: %w", maxTransactions, worlds.ErrEventInvalid)

// maxKeyPart bounds IDs and names that become part of a DynamoDB key (2048 bytes
// for the partition key, 1024 for the sort key).
const maxKeyPart = 512

// maxAppendAttempts bounds the optimistic-concurrency retries of one append.
const maxAppendAttempts = 25

// World is the AWS World: one DynamoDB table for state, SQS for deliveries and
// EventBridge Scheduler for deliveries due more than 15 minutes ahead.
type World struct {
	cfg    Config
	db     DynamoDBAPI
	sqs    SQSAPI
	table  *string
	queues map[string]queueRef // by name; defaultQueue is QueueURL
	log    *slog.Logger
	now    func() time.Time
	newID  func() string
	shards int // list shards
	// shardsRecorded is set once the table records at least shards.
	shardsRecorded atomic.Bool
	// sleep waits between append retries; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
	// written holds the items this World wrote out of run views, pending what
	// its appends left in them to write out.
	written writtenOut
	pending pendingOut
}

var _ worlds.World = (*World)(nil)

// New validates cfg and returns a World using the given clients. It does not
// contact AWS. Each invalid field is reported as a *[ConfigError].
func New(cfg Config, db DynamoDBAPI, sqsClient SQSAPI) (*World, error) {
	if db == nil {
		return nil, &ConfigError{Field: "dynamodbClient", Value: "<nil>", Reason: "required"}
	}
	if sqsClient == nil {
		return nil, &ConfigError{Field: "sqsClient", Value: "<nil>", Reason: "required"}
	}
	if err := validate(&cfg); err != nil {
		return nil, err
	}
	w := &World{cfg: cfg, db: db, sqs: sqsClient, table: aws.String(cfg.TableName), log: cfg.Logger, now: cfg.Clock, newID: cfg.NewID, shards: cfg.ListShards, sleep: sleepCtx}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.now == nil {
		w.now = time.Now
	}
	if w.newID == nil {
		w.newID = randomID
	}
	w.queues = map[string]queueRef{defaultQueue: {name: defaultQueue, QueueConfig: QueueConfig{URL: cfg.QueueURL}}}
	if cfg.Scheduler != nil {
		w.queues[defaultQueue] = queueRef{name: defaultQueue, QueueConfig: QueueConfig{URL: cfg.QueueURL, ARN: cfg.Scheduler.TargetARN}}
	}
	for name, q := range cfg.Queues {
		w.queues[name] = queueRef{name: name, QueueConfig: q}
	}
	return w, nil
}

// Capabilities reports retention when configured, and the AWS limits.
func (w *World) Capabilities() worlds.Capabilities {
	c := worlds.Capabilities{Retention: w.cfg.Retention > 0 || len(w.cfg.Retentions) > 0, MaxStreamWrite: MaxStreamWrite, MaxItemBytes: maxItemBytes}
	if w.cfg.Scheduler == nil {
		c.MaxDelay = MaxSQSDelay
	}
	return c
}

var idEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return idEncoding.EncodeToString(b[:])
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff is full jitter over an exponential ceiling from 10 ms to 1 s.
func backoff(attempt int) time.Duration {
	ceiling := 10 * time.Millisecond << min(attempt, 7)
	return time.Duration(mrand.Int64N(int64(min(ceiling, time.Second))) + 1)
}

func (w *World) getItem(ctx context.Context, pk, sk string) (map[string]types.AttributeValue, error) {
	out, err := w.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: w.table, Key: key(pk, sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("awsworld: get %s/%s: %w", pk, sk, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

func getEntity[T any](ctx context.Context, w *World, pk, sk string) (*T, error) {
	item, err := w.getItem(ctx, pk, sk)
	if err != nil || item == nil {
		return nil, err
	}
	return decodeData[T](item)
}

type runState struct {
	run     *worlds.Run
	hookIDs []string
	held    // what the run view holds
}

func decodeRun(item map[string]types.AttributeValue) (runState, error) {
	if item == nil {
		return runState{}, nil
	}
	run, h, err := decodeRunData(item)
	if err != nil {
		return runState{}, err
	}
	run.EventCount = getN(item, attrCount)
	return runState{run: run, hookIDs: getSS(item, attrHookIDs), held: h}, nil
}

func (w *World) loadRun(ctx context.Context, runID string) (runState, error) {
	item, err := w.getItem(ctx, runPK(runID), metaSK)
	if err != nil {
		return runState{}, err
	}
	return decodeRun(item)
}

func itemKey(pk, sk string) string { return pk + "\x00" + sk }

// loader reads the entities worlds.Plan validates against with consistent reads,
// most of them prefetched with the run view in one BatchGetItem. The write's
// conditions make the reads hold at commit: run-partition items only change under
// the run's event count (an item written out of the run view holds what the run
// view held, unchanged), tokens under their own condition.
type loader struct {
	w       *World
	hookIDs []string
	open    map[string]openStep
	waits   map[string]worlds.Wait
	// complete is set when the run view holds every step that has an item.
	complete bool
	// fetched holds the prefetched items by key; a key present with a nil item was
	// read and does not exist.
	fetched map[string]map[string]types.AttributeValue
}

// prefetch reads the run view and every item the events' validation needs in one
// consistent BatchGetItem (more for over 100 keys).
//
// With hint, the run view the caller expects to read, the item of a step being
// created is left out when hint holds every step that has an item and not
// this one: the loader reads it after all if the run view read says otherwise.
func (w *World) prefetch(ctx context.Context, runID string, events []worlds.Event, hint *held) (runState, *loader, error) {
	seen := map[string]bool{}
	var keys []map[string]types.AttributeValue
	add := func(pk, sk string) {
		if k := itemKey(pk, sk); !seen[k] {
			seen[k] = true
			keys = append(keys, key(pk, sk))
		}
	}
	add(runPK(runID), metaSK)
	for _, ev := range events {
		if ev.CorrelationID == "" {
			continue
		}
		need := worlds.NeedsFor(ev.Type)
		// A step an event other than its creation names is most likely held in
		// the run view: its item is read only if the run view does not hold it.
		if need.Step && ev.Type == worlds.EventStepCreated {
			if !hint.knows(ev.CorrelationID) {
				add(runPK(runID), stepSK(ev.CorrelationID))
			}
		}
		if need.Hook {
			add(hookPK(ev.CorrelationID), metaSK)
		}
		if need.TokenOwner && ev.Token != "" && len(ev.Token) <= worlds.MaxTokenLength {
			add(tokenPK(ev.Token), metaSK)
		}
		if need.Wait {
			add(runPK(runID), waitSK(ev.CorrelationID))
		}
	}
	items, err := w.batchGet(ctx, keys)
	if err != nil {
		return runState{}, nil, err
	}
	l := &loader{w: w, fetched: make(map[string]map[string]types.AttributeValue, len(keys))}
	for _, k := range keys {
		l.fetched[itemKey(getS(k, attrPK), getS(k, attrSK))] = nil
	}
	for _, item := range items {
		l.fetched[itemKey(getS(item, attrPK), getS(item, attrSK))] = item
	}
	st, err := decodeRun(l.fetched[itemKey(runPK(runID), metaSK)])
	l.hookIDs, l.open, l.waits, l.complete = st.hookIDs, st.open, st.waits, st.complete
	return st, l, err
}

func (l *loader) item(ctx context.Context, pk, sk string) (map[string]types.AttributeValue, error) {
	if item, ok := l.fetched[itemKey(pk, sk)]; ok {
		return item, nil
	}
	return l.w.getItem(ctx, pk, sk)
}

func loadEntity[T any](ctx context.Context, l *loader, pk, sk string) (*T, error) {
	item, err := l.item(ctx, pk, sk)
	if err != nil || item == nil {
		return nil, err
	}
	return decodeData[T](item)
}

// Step returns the step the prefetched run view holds, else its item. Either
// holds at commit, when the run view's event count is unchanged; a step that
// moved from the run view to its item meanwhile changed the count, so the
// write fails and the append is planned again.
func (l *loader) Step(ctx context.Context, runID, stepID string) (*worlds.Step, error) {
	if o, ok := l.open[stepID]; ok {
		return &o.Step, nil
	}
	if l.complete {
		return nil, nil
	}
	return loadEntity[worlds.Step](ctx, l, runPK(runID), stepSK(stepID))
}

func (l *loader) Hook(ctx context.Context, hookID string) (*worlds.Hook, error) {
	return loadEntity[worlds.Hook](ctx, l, hookPK(hookID), metaSK)
}

func (l *loader) TokenOwner(ctx context.Context, token string) (*worlds.Hook, error) {
	item, err := l.item(ctx, tokenPK(token), metaSK)
	if err != nil || item == nil {
		return nil, err
	}
	h, err := loadEntity[worlds.Hook](ctx, l, hookPK(getS(item, attrHook)), metaSK)
	if err != nil || h == nil || h.Status != worlds.HookActive {
		return nil, err
	}
	return h, nil
}

// Wait returns the wait the prefetched run view holds, else its item; see Step.
func (l *loader) Wait(ctx context.Context, runID, waitID string) (*worlds.Wait, error) {
	if wt, ok := l.waits[waitID]; ok {
		return &wt, nil
	}
	return loadEntity[worlds.Wait](ctx, l, runPK(runID), waitSK(waitID))
}

func (l *loader) ActiveHooks(ctx context.Context, runID string) ([]worlds.Hook, error) {
	hooks, err := l.w.batchGetHooks(ctx, l.hookIDs)
	if err != nil {
		return nil, err
	}
	var out []worlds.Hook
	for _, h := range hooks {
		if h.Status == worlds.HookActive && h.RunID == runID {
			out = append(out, h)
		}
	}
	return out, nil
}

func (w *World) tokenOwner(ctx context.Context, token string) (*worlds.Hook, error) {
	item, err := w.getItem(ctx, tokenPK(token), metaSK)
	if err != nil || item == nil {
		return nil, err
	}
	return getEntity[worlds.Hook](ctx, w, hookPK(getS(item, attrHook)), metaSK)
}

// Append validates events with worlds.Plan against consistent reads and writes
// them, the run view and every changed projection in one write guarded by the
// run's event count (a PutItem of the run view, or a TransactWriteItems), retrying
// with jittered backoff when another writer won. Around it, it writes out what
// run views hold for good (see flushHeld).
func (w *World) Append(ctx context.Context, runID string, events ...worlds.Event) ([]worlds.Event, error) {
	if runID == "" || len(runID) > maxKeyPart {
		return nil, &worlds.ArgumentError{Field: "runID", Value: len(runID), Reason: fmt.Sprintf("must be 1 to %d bytes", maxKeyPart)}
	}
	// Shape errors first, so no key is built from an oversized ID or token.
	for i := range events {
		ev := events[i]
		ev.RunID = runID
		if err := ev.Validate(); err != nil {
			return nil, err
		}
	}
	if err := w.recordShards(ctx); err != nil {
		return nil, err
	}
	// What this World's last append to the run left in the run view is written
	// out beside the first reads; flushHeld then skips it.
	var wrote chan struct{}
	p, last := w.pending.take(runID)
	if last {
		wrote = make(chan struct{})
		go func() {
			defer close(wrote)
			if err := w.flushHeld(ctx, p, !p.carry); err != nil {
				w.log.DebugContext(ctx, "awsworld: writing out what the run view holds; the append tries again", "runId", runID, "err", err)
			}
		}()
	}
	for attempt := 0; attempt < maxAppendAttempts; attempt++ {
		// This World's last run view of the run, if it is still current, says
		// which step items can exist; the prefetch reads the others.
		var hint *held
		if last && attempt == 0 {
			hint = &p.held
		}
		st, load, err := w.prefetch(ctx, runID, events, hint)
		if wrote != nil {
			<-wrote
			wrote = nil
		}
		if err != nil {
			return nil, err
		}
		effects, err := worlds.Plan(ctx, runID, st.run, events, w.now(), load)
		if err != nil && st.run != nil && ctx.Err() == nil && !errors.Is(err, worlds.ErrRunFinished) {
			// The prefetch reads its items one by one: a rejection may come from a
			// step that moved from the run view to its item between them. Only an
			// append moves one, so an unchanged event count confirms the rejection.
			cur, rerr := w.loadRun(ctx, runID)
			if rerr != nil {
				return nil, errors.Join(err, rerr)
			}
			if cur.run != nil && cur.run.EventCount != st.run.EventCount {
				continue
			}
		}
		if err != nil {
			if errors.Is(err, worlds.ErrRunFinished) && st.run != nil && hasTerminal(events) {
				// A retried terminal append: make sure its expiry is queued.
				if qerr := w.queueExpiry(ctx, st.run); qerr != nil {
					return nil, errors.Join(err, qerr)
				}
				w.dropPending(ctx, runID)
			}
			if st.run != nil && !st.run.Status.Terminal() {
				// A refused append changes nothing: the run view it read is what
				// this World knows of the run for its next append.
				w.pending.put(runID, st)
			}
			return nil, err
		}
		after, retry, err := w.commit(ctx, st, effects)
		if err == nil {
			stored := make([]worlds.Event, len(effects))
			for i := range effects {
				stored[i] = effects[i].Event
			}
			last := effects[len(effects)-1].Run
			if after != nil && !last.Status.Terminal() {
				w.pending.put(runID, *after)
			}
			if last.Status.Terminal() {
				if err := w.queueExpiry(ctx, &last); err != nil {
					var unsent *unsentError
					if !errors.As(err, &unsent) {
						return stored, fmt.Errorf("awsworld: run %s finished but its expiry was not queued (append again to retry): %w", runID, err)
					}
					// The append committed and the expiry is recorded: do not fail
					// the append (a cancel that did happen), Sweep sends it.
					w.log.WarnContext(ctx, "awsworld: run finished; its expiry is recorded but not sent, Sweep sends it once due", "runId", runID, "err", err)
				}
				w.dropPending(ctx, runID)
			}
			return stored, nil
		}
		if !retry {
			return nil, err
		}
		if err := w.sleep(ctx, backoff(attempt)); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("awsworld: append to run %s after %d attempts: %w", runID, maxAppendAttempts, worlds.ErrAppendContention)
}

// commit writes an append planned on st: as the run view alone when fastView
// allows it and it costs no more, else as a transaction. It reports a write
// that lost the race to another writer as retryable, and returns the state a
// run view written alone leaves, nil after a transaction.
func (w *World) commit(ctx context.Context, st runState, effects []worlds.Effect) (after *runState, retry bool, err error) {
	actions, txnErr := w.appendActions(st, effects)
	view, units, next := w.fastView(st, effects)
	fast := view != nil && itemSize(view) <= fastViewMax-openSlack && (txnErr != nil || units <= txnUnits(actions))
	// What the run view holds for good and the new one leaves out is written
	// out first; a carried tail stays.
	if err := w.flushHeld(ctx, st, !fast || !st.carry); err != nil {
		return nil, false, err
	}
	if fast {
		events := make([]worlds.Event, len(effects))
		for i := range effects {
			events[i] = effects[i].Event
		}
		if retry, err := w.putView(ctx, st, view, events); err != nil || retry {
			return nil, retry, err
		}
		return &next, false, nil
	}
	if txnErr != nil {
		return nil, false, txnErr
	}
	if _, err := w.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: actions}); err != nil {
		if retryableTxn(err) {
			return nil, true, err
		}
		return nil, false, w.txnError(err, effects)
	}
	return nil, false, nil
}

func hasTerminal(events []worlds.Event) bool {
	for _, e := range events {
		switch e.Type {
		case worlds.EventRunCompleted, worlds.EventRunFailed, worlds.EventRunCancelled:
			return true
		}
	}
	return false
}

// retryableTxn reports a transaction cancelled by a condition another writer broke
// (the event count, a token claim, a new hook ID) or by a concurrent transaction.
func retryableTxn(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		var tcf *types.TransactionConflictException
		return errors.As(err, &tcf)
	}
	for _, r := range tce.CancellationReasons {
		switch aws.ToString(r.Code) {
		case "ConditionalCheckFailed", "TransactionConflict":
			return true
		}
	}
	return false
}

func (w *World) txnError(err error, effects []worlds.Effect) error {
	msg := err.Error()
	if strings.Contains(msg, "Item size") || strings.Contains(msg, "size has exceeded") || strings.Contains(msg, "Transaction request cannot be larger") {
		ev := effects[0].Event
		return &worlds.EventError{Kind: worlds.ErrEventInvalid, Cause: worlds.ErrItemTooLarge, RunID: ev.RunID, Type: ev.Type, CorrelationID: ev.CorrelationID, Reason: msg}
	}
	return fmt.Errorf("awsworld: append to run %s: %w", effects[0].Event.RunID, err)
}

type tokenState struct {
	hookID, runID string
	claimed       bool
}

// eventItems packs the events of one append into as few items as fit DynamoDB's
// item size: a pack is keyed by the seq of its last event and holds a JSON array,
// a single event keeps the layout of one JSON object under its own seq, both
// compressed (see compressData). Items are sized by their JSON, so an item fits
// uncompressed too. Writing an
// append's step outcome, the next step's creation and its start as one item instead
// of three saves four write units a step (each transactional item is billed at
// least 2), and keying packs by their last seq keeps the log ordered by sort key,
// so ListEvents finds the pack holding any seq with one range query.
func eventItems(effects []worlds.Effect) ([]map[string]types.AttributeValue, error) {
	runID := effects[0].Event.RunID
	// eventSK is fixed-width, so every event item of the run has the size of
	// its key and attribute names plus its data.
	base := itemSize(key(runPK(runID), eventSK(0))) + len(attrData) + len("[]")
	var items []map[string]types.AttributeValue
	var pack []string
	var packSeq int64
	size := base
	flush := func() {
		if len(pack) == 0 {
			return
		}
		item := key(runPK(runID), eventSK(packSeq))
		if len(pack) == 1 {
			item[attrData] = compressData(pack[0])
		} else {
			item[attrData] = compressData("[" + strings.Join(pack, ",") + "]")
		}
		items = append(items, item)
		pack, size = nil, base
	}
	for i := range effects {
		ev := effects[i].Event
		data := encodeData(ev).(*types.AttributeValueMemberS).Value
		if base+len(data) > maxItemBytes {
			return nil, itemTooLarge(ev, "event", base+len(data))
		}
		if len(pack) > 0 && size+len(data)+1 > maxItemBytes {
			flush()
		}
		pack = append(pack, data)
		packSeq = ev.Seq
		size += len(data) + 1
	}
	flush()
	return items, nil
}

// itemTooLarge is the error for an append whose item of the given kind does not
// fit DynamoDB's item size.
func itemTooLarge(ev worlds.Event, what string, size int) error {
	return &worlds.EventError{Kind: worlds.ErrEventInvalid, Cause: worlds.ErrItemTooLarge, RunID: ev.RunID, Type: ev.Type, CorrelationID: ev.CorrelationID,
		Reason: fmt.Sprintf("%s item is %d bytes, over DynamoDB's %d", what, size, maxItemBytes)}
}

// decodeEvents reads the events of one event item: a single event (every item
// written before packing, and every append of one event) or a pack of several.
func decodeEvents(item map[string]types.AttributeValue) ([]worlds.Event, error) {
	data, err := dataJSON(item)
	if err == nil {
		if !strings.HasPrefix(data, "[") {
			data = "[" + data + "]"
		}
		var evs []worlds.Event
		if err = json.Unmarshal([]byte(data), &evs); err == nil {
			return evs, nil
		}
	}
	return nil, fmt.Errorf("awsworld: decode %s/%s: %w", getS(item, attrPK), getS(item, attrSK), err)
}

// appendActions turns effects into the transaction: events, then each changed
// item once in its final state, then the run view with the count condition.
func (w *World) appendActions(st runState, effects []worlds.Effect) ([]types.TransactWriteItem, error) {
	var actions []types.TransactWriteItem
	put := func(item map[string]types.AttributeValue, cond string, names map[string]string, values map[string]types.AttributeValue) {
		p := &types.Put{TableName: w.table, Item: item}
		if cond != "" {
			p.ConditionExpression = aws.String(cond)
			p.ExpressionAttributeNames = names
			p.ExpressionAttributeValues = values
		}
		actions = append(actions, types.TransactWriteItem{Put: p})
	}

	existing := map[string]bool{}
	for _, id := range st.hookIDs {
		existing[id] = true
	}
	hookIDs := append([]string(nil), st.hookIDs...)
	type stepChange struct {
		step    *worlds.Step
		created int64 // seq of step_created, for a step created in this append or open in the run view
		ev      worlds.Event
	}
	steps, hooks, waits := map[string]*stepChange{}, map[string]*worlds.Hook{}, map[string]*worlds.Wait{}
	newHooks := map[string]bool{}
	var stepOrder, hookOrder, waitOrder []string
	tokens := map[string]*tokenState{}
	var tokenOrder []string
	setToken := func(token string, ts tokenState) {
		if _, ok := tokens[token]; !ok {
			tokenOrder = append(tokenOrder, token)
		}
		tokens[token] = &ts
	}
	setHook := func(h *worlds.Hook) {
		if _, ok := hooks[h.HookID]; !ok {
			hookOrder = append(hookOrder, h.HookID)
		}
		hooks[h.HookID] = h
	}
	evItems, err := eventItems(effects)
	if err != nil {
		return nil, err
	}
	for _, item := range evItems {
		put(item, "", nil, nil)
	}
	for i := range effects {
		eff := &effects[i]
		if eff.Step != nil {
			c, ok := steps[eff.Step.StepID]
			if !ok {
				c = &stepChange{}
				steps[eff.Step.StepID] = c
				stepOrder = append(stepOrder, eff.Step.StepID)
				if eff.Event.Type == worlds.EventStepCreated {
					c.created = eff.Event.Seq
				} else if o, ok := st.open[eff.Step.StepID]; ok {
					c.created = o.Seq
				}
			}
			c.step, c.ev = eff.Step, eff.Event
		}
		if eff.Hook != nil {
			setHook(eff.Hook)
			if eff.Event.Type == worlds.EventHookCreated && !existing[eff.Hook.HookID] {
				newHooks[eff.Hook.HookID] = true
				existing[eff.Hook.HookID] = true
				hookIDs = append(hookIDs, eff.Hook.HookID)
			}
		}
		for j := range eff.DisposedHooks {
			setHook(&eff.DisposedHooks[j])
		}
		if eff.ClaimToken != "" {
			setToken(eff.ClaimToken, tokenState{hookID: eff.Hook.HookID, runID: eff.Hook.RunID, claimed: true})
		}
		for _, tok := range eff.ReleaseTokens {
			owner := ""
			if eff.Hook != nil && eff.Hook.Token == tok {
				owner = eff.Hook.HookID
			}
			for _, h := range eff.DisposedHooks {
				if h.Token == tok {
					owner = h.HookID
				}
			}
			setToken(tok, tokenState{hookID: owner, claimed: false})
		}
		if eff.Wait != nil {
			if _, ok := waits[eff.Wait.WaitID]; !ok {
				waitOrder = append(waitOrder, eff.Wait.WaitID)
			}
			waits[eff.Wait.WaitID] = eff.Wait
		}
	}
	// Unfinished steps that have no item stay in (or join) the run view; the
	// others are written to their items below, once the run view is built.
	// Finished ones the run view held are written out by flushHeld.
	var open []openStep
	for id, o := range st.open {
		if _, changed := steps[id]; !changed && !o.Step.Status.Terminal() {
			open = append(open, o)
		}
	}
	putStep := func(o openStep, ev worlds.Event) error {
		item := stepItem(o)
		if size := itemSize(item); size > maxItemBytes {
			return itemTooLarge(ev, "step", size)
		}
		put(item, "", nil, nil)
		return nil
	}
	for _, id := range stepOrder {
		c := steps[id]
		if c.created > 0 {
			if !c.step.Status.Terminal() {
				open = append(open, openStep{Seq: c.created, Step: *c.step})
				continue
			}
			if err := putStep(openStep{Seq: c.created, Step: *c.step}, c.ev); err != nil {
				return nil, err
			}
			continue
		}
		data := encodeData(c.step)
		if size := attrSize(data) + 200; size > maxItemBytes {
			return nil, itemTooLarge(c.ev, "step", size)
		}
		actions = append(actions, types.TransactWriteItem{Update: &types.Update{
			TableName: w.table, Key: key(runPK(c.step.RunID), stepSK(id)),
			UpdateExpression:          aws.String("SET #d = :d"),
			ExpressionAttributeNames:  map[string]string{"#d": attrData},
			ExpressionAttributeValues: map[string]types.AttributeValue{":d": data},
		}})
	}
	for _, id := range hookOrder {
		item := w.hookItem(hooks[id])
		if size := itemSize(item); size > maxItemBytes {
			return nil, itemTooLarge(effects[0].Event, "hook", size)
		}
		if newHooks[id] {
			put(item, "attribute_not_exists(pk)", nil, nil)
		} else {
			put(item, "", nil, nil)
		}
	}
	for _, tok := range tokenOrder {
		ts := tokens[tok]
		names := map[string]string{"#h": attrHook}
		values := map[string]types.AttributeValue{":h": s(ts.hookID)}
		if ts.claimed {
			item := key(tokenPK(tok), metaSK)
			item[attrHook], item[attrRun] = s(ts.hookID), s(ts.runID)
			put(item, "attribute_not_exists(pk) OR #h = :h", names, values)
			continue
		}
		actions = append(actions, types.TransactWriteItem{Delete: &types.Delete{
			TableName: w.table, Key: key(tokenPK(tok), metaSK),
			ConditionExpression:      aws.String("attribute_not_exists(pk) OR #h = :h"),
			ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		}})
	}
	// Waits the run view holds and this append leaves unchanged move to their
	// items: the run view a transaction writes holds none. Completed ones are
	// written out by flushHeld.
	for _, id := range slices.Sorted(maps.Keys(st.waits)) {
		if wt := st.waits[id]; waits[id] == nil && wt.Status != worlds.WaitCompleted {
			waits[id] = &wt
			waitOrder = append(waitOrder, id)
		}
	}
	for _, id := range waitOrder {
		put(waitItem(waits[id]), "", nil, nil)
	}
	last := effects[len(effects)-1].Run
	actions = append(actions, w.attrActions(st.run, &last)...)
	meta := w.runItem(&last, hookIDs)
	if size := itemSize(meta); size > maxItemBytes {
		return nil, itemTooLarge(effects[len(effects)-1].Event, "run view", size)
	}
	for _, o := range placeOpenSteps(meta, open) {
		ev := effects[len(effects)-1].Event
		if c, ok := steps[o.Step.StepID]; ok {
			ev = c.ev
		}
		if err := putStep(o, ev); err != nil {
			return nil, err
		}
	}
	if st.run == nil {
		put(meta, "attribute_not_exists(pk)", nil, nil)
	} else {
		put(meta, "#c = :c", map[string]string{"#c": attrCount}, map[string]types.AttributeValue{":c": n(st.run.EventCount)})
	}
	if len(actions) > maxTransactions {
		return nil, fmt.Errorf("%w: %d events need %d actions", ErrTooManyActions, len(effects), len(actions))
	}
	total := 0
	for _, a := range actions {
		if a.Put != nil {
			total += itemSize(a.Put.Item)
		}
	}
	if total > 4*1024*1024 {
		ev := effects[0].Event
		return nil, &worlds.EventError{Kind: worlds.ErrEventInvalid, Cause: worlds.ErrItemTooLarge, RunID: ev.RunID, Type: ev.Type, Reason: fmt.Sprintf("append writes %d bytes, over DynamoDB's 4 MB per transaction", total)}
	}
	return actions, nil
}

// GetRun returns the run view.
func (w *World) GetRun(ctx context.Context, runID string) (worlds.Run, error) {
	st, err := w.loadRun(ctx, runID)
	if err != nil {
		return worlds.Run{}, err
	}
	if st.run == nil {
		return worlds.Run{}, fmt.Errorf("%w: %s", worlds.ErrRunNotFound, runID)
	}
	return *st.run, nil
}

// GetStep returns one step: from its item, else from the run view, which holds
// unfinished steps. Both are read in one request.
func (w *World) GetStep(ctx context.Context, runID, stepID string) (worlds.Step, error) {
	return getHeld(ctx, w, runID, stepSK(stepID), func(st runState) (worlds.Step, bool) {
		o, ok := st.open[stepID]
		return o.Step, ok
	}, fmt.Errorf("%w: %s/%s", worlds.ErrStepNotFound, runID, stepID))
}

// getHeld reads an entity the run view may hold instead of its item: the item
// and the run view in one request, the item first, else the run view's copy,
// else the item once more (the entity may have moved to it between the two
// reads). An item whose run view is gone outlives its run only as a stray copy.
func getHeld[T any](ctx context.Context, w *World, runID, sk string, fromView func(runState) (T, bool), notFound error) (T, error) {
	var zero T
	items, err := w.batchGet(ctx, []map[string]types.AttributeValue{key(runPK(runID), sk), key(runPK(runID), metaSK)})
	if err != nil {
		return zero, err
	}
	var run runState
	var stored *T
	for _, item := range items {
		if getS(item, attrSK) == metaSK {
			if run, err = decodeRun(item); err != nil {
				return zero, err
			}
			continue
		}
		if stored, err = decodeData[T](item); err != nil {
			return zero, err
		}
	}
	if run.run == nil {
		return zero, notFound
	}
	if stored != nil {
		return *stored, nil
	}
	if v, ok := fromView(run); ok {
		return v, nil
	}
	if stored, err = getEntity[T](ctx, w, runPK(runID), sk); err != nil {
		return zero, err
	}
	if stored == nil {
		return zero, notFound
	}
	return *stored, nil
}

// GetHook returns a hook by ID.
func (w *World) GetHook(ctx context.Context, hookID string) (worlds.Hook, error) {
	h, err := getEntity[worlds.Hook](ctx, w, hookPK(hookID), metaSK)
	if err != nil {
		return worlds.Hook{}, err
	}
	if h == nil {
		return worlds.Hook{}, fmt.Errorf("%w: %s", worlds.ErrHookNotFound, hookID)
	}
	return *h, nil
}

// GetHookByToken returns the active hook owning token.
func (w *World) GetHookByToken(ctx context.Context, token string) (worlds.Hook, error) {
	if token == "" {
		return worlds.Hook{}, fmt.Errorf("%w: empty token", worlds.ErrHookNotFound)
	}
	h, err := w.tokenOwner(ctx, token)
	if err != nil {
		return worlds.Hook{}, err
	}
	if h == nil || h.Status != worlds.HookActive {
		return worlds.Hook{}, fmt.Errorf("%w: no active hook owns the token", worlds.ErrHookNotFound)
	}
	return *h, nil
}

// GetWait returns a durable timer: from its item, else from the run view, which
// holds waits of appends written as the run view alone. Both are read in one
// request.
func (w *World) GetWait(ctx context.Context, runID, waitID string) (worlds.Wait, error) {
	return getHeld(ctx, w, runID, waitSK(waitID), func(st runState) (worlds.Wait, bool) {
		wt, ok := st.waits[waitID]
		return wt, ok
	}, fmt.Errorf("%w: %s/%s", worlds.ErrWaitNotFound, runID, waitID))
}
