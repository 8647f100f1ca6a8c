package awsworld

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
)

type streamState struct {
	exists  bool
	chunks  int64
	closed  bool
	created string
}

func (w *World) loadStream(ctx context.Context, runID, name string) (streamState, error) {
	item, err := w.getItem(ctx, runPK(runID), streamSK(name))
	if err != nil || item == nil {
		return streamState{}, err
	}
	b, _ := item[attrClosed].(*types.AttributeValueMemberBOOL)
	return streamState{exists: true, chunks: getN(item, attrChunks), closed: b != nil && b.Value, created: getS(item, attrCreated)}, nil
}

// writableRun checks that the run exists and has not finished. Streams are written
// outside appends, so this is a consistent read before the write rather than a
// transaction condition: a stream write's 99 chunks and stream item already fill
// one transaction.
func (w *World) writableRun(ctx context.Context, runID string) error {
	st, err := w.loadRun(ctx, runID)
	if err != nil {
		return err
	}
	if st.run == nil {
		return fmt.Errorf("%w: %s", worlds.ErrRunNotFound, runID)
	}
	if st.run.Status.Terminal() {
		return fmt.Errorf("%w: run %s is %s", worlds.ErrRunFinished, runID, st.run.Status)
	}
	return nil
}

func (w *World) streamItem(runID, name string, st streamState, chunks int64, closed bool, now time.Time) map[string]types.AttributeValue {
	item := key(runPK(runID), streamSK(name))
	created := st.created
	if created == "" {
		created = now.UTC().Format(time.RFC3339Nano)
	}
	item[attrName] = s(name)
	item[attrChunks] = n(chunks)
	item[attrClosed] = &types.AttributeValueMemberBOOL{Value: closed}
	item[attrCreated] = s(created)
	item[attrUpdated] = s(now.UTC().Format(time.RFC3339Nano))
	return item
}

// streamGuard makes a stream write commit only over the state it was planned on.
func streamGuard(p *types.Put, st streamState) {
	if !st.exists {
		p.ConditionExpression = aws.String("attribute_not_exists(pk)")
		return
	}
	p.ConditionExpression = aws.String("#n = :n AND #c = :f")
	p.ExpressionAttributeNames = map[string]string{"#n": attrChunks, "#c": attrClosed}
	p.ExpressionAttributeValues = map[string]types.AttributeValue{":n": n(st.chunks), ":f": &types.AttributeValueMemberBOOL{Value: false}}
}

// WriteStream appends up to [MaxStreamWrite] chunks in one transaction with the
// stream item, guarded by the stream's chunk count.
func (w *World) WriteStream(ctx context.Context, runID, name string, chunks ...[]byte) (int, error) {
	if name == "" || len(name) > maxKeyPart {
		return 0, &worlds.ArgumentError{Field: "name", Value: len(name), Reason: fmt.Sprintf("stream name must be 1 to %d bytes", maxKeyPart)}
	}
	if len(chunks) > MaxStreamWrite {
		return 0, fmt.Errorf("%w: %d chunks, at most %d per write", worlds.ErrTooManyChunks, len(chunks), MaxStreamWrite)
	}
	total := 0
	for i, c := range chunks {
		if size := len(c) + 64 + len(chunkSK(name, 0)); size > maxItemBytes {
			return 0, fmt.Errorf("%w: chunk %d is %d bytes, over DynamoDB's %d per item", worlds.ErrItemTooLarge, i, len(c), maxItemBytes)
		}
		total += len(c)
	}
	if total > 4*1024*1024-64*1024 {
		return 0, fmt.Errorf("%w: %d bytes in one write, over DynamoDB's 4 MB per transaction", worlds.ErrItemTooLarge, total)
	}
	if err := w.writableRun(ctx, runID); err != nil {
		return 0, err
	}
	for attempt := 0; attempt < maxAppendAttempts; attempt++ {
		st, err := w.loadStream(ctx, runID, name)
		if err != nil {
			return 0, err
		}
		if st.closed {
			return 0, fmt.Errorf("%w: %s/%s", worlds.ErrStreamClosed, runID, name)
		}
		if len(chunks) == 0 && st.exists {
			return int(st.chunks), nil
		}
		streamPut := &types.Put{TableName: w.table, Item: w.streamItem(runID, name, st, st.chunks+int64(len(chunks)), false, w.now())}
		streamGuard(streamPut, st)
		actions := []types.TransactWriteItem{{Put: streamPut}}
		for i, c := range chunks {
			item := key(runPK(runID), chunkSK(name, int(st.chunks)+i))
			item[attrData] = &types.AttributeValueMemberB{Value: append([]byte{}, c...)}
			actions = append(actions, types.TransactWriteItem{Put: &types.Put{TableName: w.table, Item: item}})
		}
		_, err = w.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: actions})
		if err == nil {
			return int(st.chunks), nil
		}
		if !retryableTxn(err) {
			return 0, fmt.Errorf("awsworld: write stream %s/%s: %w", runID, name, err)
		}
		if err := w.sleep(ctx, backoff(attempt)); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("awsworld: write stream %s/%s: %w", runID, name, worlds.ErrAppendContention)
}

// CloseStream closes a stream, creating it closed and empty if never written.
func (w *World) CloseStream(ctx context.Context, runID, name string) error {
	if name == "" || len(name) > maxKeyPart {
		return &worlds.ArgumentError{Field: "name", Value: len(name), Reason: fmt.Sprintf("stream name must be 1 to %d bytes", maxKeyPart)}
	}
	if err := w.requireRun(ctx, runID); err != nil {
		return err
	}
	for attempt := 0; attempt < maxAppendAttempts; attempt++ {
		st, err := w.loadStream(ctx, runID, name)
		if err != nil {
			return err
		}
		if st.closed {
			return nil
		}
		p := &types.Put{TableName: w.table, Item: w.streamItem(runID, name, st, st.chunks, true, w.now())}
		streamGuard(p, st)
		_, err = w.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: w.table, Item: p.Item, ConditionExpression: p.ConditionExpression,
			ExpressionAttributeNames: p.ExpressionAttributeNames, ExpressionAttributeValues: p.ExpressionAttributeValues})
		if err == nil {
			return nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return fmt.Errorf("awsworld: close stream %s/%s: %w", runID, name, err)
		}
		if err := w.sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
	return fmt.Errorf("awsworld: close stream %s/%s: %w", runID, name, worlds.ErrAppendContention)
}

// ReadStream returns up to limit chunks from index from with a consistent query.
func (w *World) ReadStream(ctx context.Context, runID, name string, from, limit int) (worlds.StreamPage, error) {
	if from < 0 {
		return worlds.StreamPage{}, &worlds.ArgumentError{Field: "from", Value: from, Reason: "must not be negative"}
	}
	limit, err := worlds.PageLimit(limit)
	if err != nil {
		return worlds.StreamPage{}, err
	}
	st, err := w.loadStream(ctx, runID, name)
	if err != nil {
		return worlds.StreamPage{}, err
	}
	if !st.exists {
		if err := w.requireRun(ctx, runID); err != nil {
			return worlds.StreamPage{}, err
		}
		return worlds.StreamPage{}, fmt.Errorf("%w: %s/%s", worlds.ErrStreamNotFound, runID, name)
	}
	page := worlds.StreamPage{Chunks: []worlds.Chunk{}, Next: from}
	if int64(from) < st.chunks {
		idx := from
		err = w.queryRun(ctx, runID, chunkSK(name, from), chunkSK(name, int(st.chunks)-1), limit, func(item map[string]types.AttributeValue) bool {
			b, _ := item[attrData].(*types.AttributeValueMemberB)
			var data []byte
			if b != nil {
				data = b.Value
			}
			page.Chunks = append(page.Chunks, worlds.Chunk{Index: idx, Data: data})
			idx++
			return len(page.Chunks) < limit
		})
		if err != nil {
			return worlds.StreamPage{}, err
		}
		page.Next = idx
	}
	page.Closed = st.closed && int64(page.Next) >= st.chunks
	return page, nil
}

// ListStreams lists a run's streams by name.
func (w *World) ListStreams(ctx context.Context, runID string) ([]worlds.StreamInfo, error) {
	if err := w.requireRun(ctx, runID); err != nil {
		return nil, err
	}
	out := []worlds.StreamInfo{}
	err := w.queryRun(ctx, runID, "STREAM#", "STREAM#~", 0, func(item map[string]types.AttributeValue) bool {
		name := getS(item, attrName)
		b, _ := item[attrClosed].(*types.AttributeValueMemberBOOL)
		created, _ := time.Parse(time.RFC3339Nano, getS(item, attrCreated))
		updated, _ := time.Parse(time.RFC3339Nano, getS(item, attrUpdated))
		out = append(out, worlds.StreamInfo{RunID: runID, Name: name, Chunks: int(getN(item, attrChunks)), Closed: b != nil && b.Value, CreatedAt: created, UpdatedAt: updated})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}
