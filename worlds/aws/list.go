package awsworld

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

func encodeCursor(v map[string]string) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(c string) (map[string]string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	var v map[string]string
	if err == nil {
		err = json.Unmarshal(b, &v)
	}
	if err != nil {
		return nil, &worlds.ArgumentError{Field: "Cursor", Value: c, Reason: "not a cursor this World returned"}
	}
	return v, nil
}

// batchGet fetches items by key with consistent BatchGetItem calls of at most 100
// keys, retrying unprocessed keys, and returns them in key order (missing skipped).
func (w *World) batchGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	found := map[string]map[string]types.AttributeValue{}
	for start := 0; start < len(keys); start += 100 {
		pending := keys[start:min(start+100, len(keys))]
		for attempt := 0; len(pending) > 0; attempt++ {
			out, err := w.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				w.cfg.TableName: {Keys: pending, ConsistentRead: aws.Bool(true)},
			}})
			if err != nil {
				return nil, fmt.Errorf("awsworld: batch get: %w", err)
			}
			for _, item := range out.Responses[w.cfg.TableName] {
				found[getS(item, attrPK)+"\x00"+getS(item, attrSK)] = item
			}
			pending = out.UnprocessedKeys[w.cfg.TableName].Keys
			if len(pending) > 0 {
				if err := w.sleep(ctx, backoff(attempt)); err != nil {
					return nil, err
				}
			}
		}
	}
	var items []map[string]types.AttributeValue
	for _, k := range keys {
		if item, ok := found[getS(k, attrPK)+"\x00"+getS(k, attrSK)]; ok {
			items = append(items, item)
		}
	}
	return items, nil
}

func (w *World) batchGetHooks(ctx context.Context, ids []string) ([]worlds.Hook, error) {
	keys := make([]map[string]types.AttributeValue, len(ids))
	for i, id := range ids {
		keys[i] = key(hookPK(id), metaSK)
	}
	items, err := w.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	hooks := make([]worlds.Hook, 0, len(items))
	for _, item := range items {
		h, err := decodeData[worlds.Hook](item)
		if err != nil {
			return nil, err
		}
		hooks = append(hooks, *h)
	}
	return hooks, nil
}

// indexQuery pages newest first through one partition of an index, keeping keys
// whose status matches.
type indexQuery struct {
	index, pkAttr, skAttr, pk string
	status                    string
	after, before             string // exclusive sort-key bounds, empty for none
}

// queryIndex returns up to limit keys of q's partition, newest first.
func (w *World) queryIndex(ctx context.Context, q indexQuery, limit int) ([]map[string]types.AttributeValue, error) {
	names := map[string]string{"#pk": q.pkAttr}
	if q.after != "" || q.before != "" {
		names["#sk"] = q.skAttr
	}
	values := map[string]types.AttributeValue{":pk": s(q.pk)}
	cond := "#pk = :pk"
	switch {
	case q.after != "" && q.before != "":
		cond += " AND #sk BETWEEN :a AND :b"
		values[":a"], values[":b"] = s(q.after), s(q.before)
	case q.after != "":
		cond += " AND #sk > :a"
		values[":a"] = s(q.after)
	case q.before != "":
		cond += " AND #sk < :b"
		values[":b"] = s(q.before)
	}
	in := &dynamodb.QueryInput{
		TableName: w.table, IndexName: aws.String(q.index), KeyConditionExpression: aws.String(cond),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values, ScanIndexForward: aws.Bool(false),
	}
	if q.status != "" {
		in.FilterExpression = aws.String("#st = :st")
		names["#st"] = attrStatus
		values[":st"] = s(q.status)
	}
	var keys []map[string]types.AttributeValue
	for {
		in.Limit = aws.Int32(int32(min(limit-len(keys), 1000)))
		out, err := w.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("awsworld: query index %s: %w", q.index, err)
		}
		for _, item := range out.Items {
			// BETWEEN is inclusive; the filter's bounds are exclusive.
			if sk := getS(item, q.skAttr); sk == q.after || sk == q.before {
				continue
			}
			keys = append(keys, item)
		}
		if len(keys) >= limit || len(out.LastEvaluatedKey) == 0 {
			return keys[:min(len(keys), limit)], nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// queryShards lists a page across the partitions pks of one index, newest first:
// it reads up to limit+1 keys of each partition below the cursor's sort key,
// merges them in sort-key order and keeps limit. Sort keys end in the unique
// ID, so the last sort key of a page is the exclusive bound of the next. legacy
// is the partition this listing used before the index was sharded (empty for
// none): it is read as one more partition, and a cursor of the unsharded
// listing is accepted, its last sort key becoming the bound.
func (w *World) queryShards(ctx context.Context, q indexQuery, pks []string, legacy string, limit int, cursor string) ([]map[string]types.AttributeValue, string, error) {
	if cursor != "" {
		c, err := decodeCursor(cursor)
		if err != nil {
			return nil, "", err
		}
		before := c["before"]
		if c["index"] == "" && legacy != "" && c[q.pkAttr] == legacy {
			before = c[q.skAttr] // a cursor from before sharding: the last key it returned
		} else if c["index"] != q.index {
			before = ""
		}
		if before == "" {
			return nil, "", &worlds.ArgumentError{Field: "Cursor", Value: cursor, Reason: "not a cursor of this listing"}
		}
		if q.before == "" || before < q.before {
			q.before = before
		}
		if q.after != "" && q.before <= q.after {
			return nil, "", nil
		}
	}
	if legacy != "" && !slices.Contains(pks, legacy) {
		pks = append(pks[:len(pks):len(pks)], legacy)
	}
	results := make([][]map[string]types.AttributeValue, len(pks))
	errs := make([]error, len(pks))
	var wg sync.WaitGroup
	for i, pk := range pks {
		wg.Go(func() {
			sq := q
			sq.pk = pk
			results[i], errs[i] = w.queryIndex(ctx, sq, limit+1)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	// An item has one index key at a time, but index propagation is eventually
	// consistent: one moved from its legacy partition may briefly show in both.
	seen := map[string]bool{}
	var keys []map[string]types.AttributeValue
	for _, r := range results {
		for _, k := range r {
			id := getS(k, attrPK) + "\x00" + getS(k, attrSK)
			if !seen[id] {
				seen[id] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return getS(keys[i], q.skAttr) > getS(keys[j], q.skAttr) })
	if len(keys) <= limit {
		return keys, "", nil
	}
	keys = keys[:limit]
	return keys, encodeCursor(map[string]string{"index": q.index, "before": getS(keys[limit-1], q.skAttr)}), nil
}

func (w *World) fetch(ctx context.Context, indexKeys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	keys := make([]map[string]types.AttributeValue, len(indexKeys))
	for i, k := range indexKeys {
		keys[i] = key(getS(k, attrPK), getS(k, attrSK))
	}
	return w.batchGet(ctx, keys)
}

// ListRuns lists runs newest first through the list or list_group index, merging
// the list shards, then reads them with consistent BatchGetItem calls.
func (w *World) ListRuns(ctx context.Context, f worlds.RunFilter) (worlds.Page[worlds.Run], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	if f.Status != "" && !f.Status.Valid() {
		return worlds.Page[worlds.Run]{}, &worlds.ArgumentError{Field: "Status", Value: f.Status, Reason: "unknown run status"}
	}
	if err := worlds.ValidateAttributeFilter(f.Attributes); err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	q := indexQuery{index: indexList, pkAttr: attrListPK, skAttr: attrListSK, status: string(f.Status)}
	shardPK, legacy := runsShardPK, legacyRunsPK
	if f.WorkflowName != "" {
		q = indexQuery{index: indexListGroup, pkAttr: attrGroupPK, skAttr: attrGroupSK, status: string(f.Status)}
		shardPK = func(shard string) string { return workflowShardPK(f.WorkflowName, shard) }
		legacy = legacyWorkflowPK(f.WorkflowName)
	}
	if !f.CreatedAfter.IsZero() {
		q.after = sortTime(f.CreatedAfter) + "#\uffff"
	}
	if !f.CreatedBefore.IsZero() {
		q.before = sortTime(f.CreatedBefore) + "#"
	}
	if !f.CreatedAfter.IsZero() && !f.CreatedBefore.IsZero() && !f.CreatedAfter.Before(f.CreatedBefore) {
		return worlds.Page[worlds.Run]{Items: []worlds.Run{}}, nil // an empty interval
	}
	if len(f.Attributes) > 0 {
		return w.listByAttributes(ctx, f, limit, q)
	}
	pks, err := w.shardPKs(ctx, shardPK)
	if err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	keys, cursor, err := w.queryShards(ctx, q, pks, legacy, limit, f.Cursor)
	if err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	items, err := w.fetch(ctx, keys)
	if err != nil {
		return worlds.Page[worlds.Run]{}, err
	}
	page := worlds.Page[worlds.Run]{Items: []worlds.Run{}, Cursor: cursor}
	for _, item := range items {
		st, err := decodeRun(item)
		if err != nil {
			return worlds.Page[worlds.Run]{}, err
		}
		r := st.run
		// The index may lag the base table; the consistent read decides.
		if f.Status != "" && r.Status != f.Status {
			continue
		}
		// A legacy RUNS#<workflow> partition can equal a sharded one of another
		// workflow whose name is a prefix of this one's ("a#3" and shard 3 of "a").
		if f.WorkflowName != "" && r.WorkflowName != f.WorkflowName {
			continue
		}
		page.Items = append(page.Items, *r)
	}
	return page, nil
}

// ListHooks lists hooks newest first, of one run through list_group
// (HOOKS#<runID>) or of every run through the list shards.
func (w *World) ListHooks(ctx context.Context, f worlds.HookFilter) (worlds.Page[worlds.Hook], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Hook]{}, err
	}
	q := indexQuery{index: indexList, pkAttr: attrListPK, skAttr: attrListSK}
	var pks []string
	legacy := legacyHooksPK
	if f.RunID != "" {
		// A run's hooks kept their unsharded partition, HOOKS#<runID>.
		q = indexQuery{index: indexListGroup, pkAttr: attrGroupPK, skAttr: attrGroupSK}
		pks, legacy = []string{runHooksPK(f.RunID)}, runHooksPK(f.RunID)
	} else if pks, err = w.shardPKs(ctx, hooksShardPK); err != nil {
		return worlds.Page[worlds.Hook]{}, err
	}
	keys, cursor, err := w.queryShards(ctx, q, pks, legacy, limit, f.Cursor)
	if err != nil {
		return worlds.Page[worlds.Hook]{}, err
	}
	items, err := w.fetch(ctx, keys)
	if err != nil {
		return worlds.Page[worlds.Hook]{}, err
	}
	page := worlds.Page[worlds.Hook]{Items: []worlds.Hook{}, Cursor: cursor}
	for _, item := range items {
		h, err := decodeData[worlds.Hook](item)
		if err != nil {
			return worlds.Page[worlds.Hook]{}, err
		}
		page.Items = append(page.Items, *h)
	}
	return page, nil
}

// queryRun runs a consistent query over part of a run's partition.
func (w *World) queryRun(ctx context.Context, runID, from, to string, limit int, forEach func(map[string]types.AttributeValue) bool) error {
	in := &dynamodb.QueryInput{
		TableName: w.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :from AND :to"),
		ExpressionAttributeNames:  map[string]string{"#pk": attrPK, "#sk": attrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": s(runPK(runID)), ":from": s(from), ":to": s(to)},
	}
	if limit > 0 {
		in.Limit = aws.Int32(int32(limit))
	}
	for {
		out, err := w.db.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("awsworld: query run %s: %w", runID, err)
		}
		for _, item := range out.Items {
			if !forEach(item) {
				return nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func (w *World) requireRun(ctx context.Context, runID string) error {
	item, err := w.getItem(ctx, runPK(runID), metaSK)
	if err != nil {
		return err
	}
	if item == nil {
		return fmt.Errorf("%w: %s", worlds.ErrRunNotFound, runID)
	}
	return nil
}

// ListEvents lists a run's events in log order with consistent queries.
func (w *World) ListEvents(ctx context.Context, runID string, f worlds.EventFilter) (worlds.Page[worlds.Event], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Event]{}, err
	}
	if f.AfterSeq < 0 {
		return worlds.Page[worlds.Event]{}, &worlds.ArgumentError{Field: "AfterSeq", Value: f.AfterSeq, Reason: "must not be negative"}
	}
	after := f.AfterSeq
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return worlds.Page[worlds.Event]{}, err
		}
		seq, err := strconv.ParseInt(c["seq"], 10, 64)
		if err != nil {
			return worlds.Page[worlds.Event]{}, &worlds.ArgumentError{Field: "Cursor", Value: f.Cursor, Reason: "not an event cursor"}
		}
		after = max(after, seq)
	}
	// The run view first, then the packs: an event of its tail is either still
	// there or, written out since, in a pack the query finds. Events appended
	// after the run view was read are left out, so the page is a prefix of the
	// log as it was then, with no gap.
	run, err := w.loadRun(ctx, runID)
	if err != nil {
		return worlds.Page[worlds.Event]{}, err
	}
	if run.run == nil {
		return worlds.Page[worlds.Event]{}, fmt.Errorf("%w: %s", worlds.ErrRunNotFound, runID)
	}
	end := min(run.run.EventCount, after+int64(limit)+1) // one more tells whether a page follows
	found := map[int64]worlds.Event{}
	keep := func(ev worlds.Event) {
		if ev.Seq > after && ev.Seq <= end {
			found[ev.Seq] = ev
		}
	}
	for _, ev := range run.tail {
		keep(ev)
	}
	var decodeErr error
	collect := func(item map[string]types.AttributeValue) bool {
		evs, err := decodeEvents(item)
		if err != nil {
			decodeErr = err
			return false
		}
		for _, ev := range evs { // a pack may start before the page
			keep(ev)
		}
		return int64(len(found)) < end-after
	}
	if int64(len(found)) < end-after {
		err = w.queryRun(ctx, runID, eventSK(after+1), eventSK(end), 0, collect)
		// The pack holding end is keyed by a later seq when end is not the
		// last event of its append.
		if _, ok := found[end]; err == nil && decodeErr == nil && !ok {
			err = w.queryRun(ctx, runID, eventSK(end+1), "EVENT#~", 1, func(item map[string]types.AttributeValue) bool {
				collect(item)
				return false
			})
		}
		if err == nil {
			err = decodeErr
		}
		if err != nil {
			return worlds.Page[worlds.Event]{}, err
		}
	}
	page := worlds.Page[worlds.Event]{Items: []worlds.Event{}}
	for seq := after + 1; seq <= end; seq++ {
		ev, ok := found[seq]
		if !ok {
			return worlds.Page[worlds.Event]{}, fmt.Errorf("awsworld: run %s: event %d is in neither the run view nor an event item", runID, seq)
		}
		page.Items = append(page.Items, ev)
	}
	if len(page.Items) > limit {
		page.Items = page.Items[:limit]
		page.Cursor = encodeCursor(map[string]string{"seq": strconv.FormatInt(page.Items[limit-1].Seq, 10)})
	}
	return page, nil
}

// ListSteps lists a run's steps in creation order (the seq of their step_created).
func (w *World) ListSteps(ctx context.Context, runID string, f worlds.ListFilter) (worlds.Page[worlds.Step], error) {
	limit, err := worlds.PageLimit(f.Limit)
	if err != nil {
		return worlds.Page[worlds.Step]{}, err
	}
	var after int64
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return worlds.Page[worlds.Step]{}, err
		}
		if after, err = strconv.ParseInt(c["created"], 10, 64); err != nil {
			return worlds.Page[worlds.Step]{}, &worlds.ArgumentError{Field: "Cursor", Value: f.Cursor, Reason: "not a step cursor"}
		}
	}
	// The run view first: a step it holds is either still there or, finished
	// since, in the items queried after it.
	run, err := w.loadRun(ctx, runID)
	if err != nil {
		return worlds.Page[worlds.Step]{}, err
	}
	if run.run == nil {
		return worlds.Page[worlds.Step]{}, fmt.Errorf("%w: %s", worlds.ErrRunNotFound, runID)
	}
	type ordered struct {
		seq  int64
		step worlds.Step
	}
	var all []ordered
	var decodeErr error
	stored := map[string]bool{}
	err = w.queryRun(ctx, runID, "STEP#", "STEP#\uffff", 0, func(item map[string]types.AttributeValue) bool {
		seq := getN(item, attrSeq)
		if seq <= after {
			return true
		}
		st, err := decodeData[worlds.Step](item)
		if err != nil {
			decodeErr = err
			return false
		}
		stored[st.StepID] = true
		all = append(all, ordered{seq, *st})
		return true
	})
	if err == nil {
		err = decodeErr
	}
	if err != nil {
		return worlds.Page[worlds.Step]{}, err
	}
	for id, o := range run.open {
		if o.Seq > after && !stored[id] {
			all = append(all, ordered{o.Seq, o.Step})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	page := worlds.Page[worlds.Step]{Items: []worlds.Step{}}
	for i, o := range all {
		if i == limit {
			page.Cursor = encodeCursor(map[string]string{"created": strconv.FormatInt(all[i-1].seq, 10)})
			break
		}
		page.Items = append(page.Items, o.step)
	}
	return page, nil
}
