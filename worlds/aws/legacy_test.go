package awsworld_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// getMeta reads the META item of pk consistently.
func getMeta(t *testing.T, e *env, pk string) map[string]ddbAttr {
	t.Helper()
	item := e.rawItem(t, pk, "META")
	if item == nil {
		t.Fatalf("get %s: no item", pk)
	}
	return item
}

// putLegacy writes item back as the version before the sharded list index wrote
// it: list keys set to listPK and groupPK (removed when empty) and no queue
// index attributes.
func putLegacy(t *testing.T, e *env, item map[string]ddbAttr, listPK, groupPK string) {
	t.Helper()
	for _, a := range []string{"published_at", "scheduled"} {
		delete(item, a)
	}
	if listPK == "" {
		for _, a := range []string{"list_pk", "list_sk", "list_group_pk", "list_group_sk"} {
			delete(item, a)
		}
	} else {
		item["list_pk"], item["list_group_pk"] = ddbS(listPK), ddbS(groupPK)
	}
	if _, err := e.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(e.cfg.TableName), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// Runs and hooks written before the list index was sharded (list_pk RUNS and
// HOOKS, list_group_pk RUNS#<workflow>) are listed together with the sharded
// ones: each exactly once, newest first, across pages; a cursor the unsharded
// listing returned still continues it; and a legacy item written again moves to
// its shard without appearing twice.
func TestLegacyListEntriesAreListed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *env, c *awsworld.Config) { c.ListShards = 3 })
	ctx := context.Background()
	const n = 17
	var all, ofB, hooks []string
	for i := range n {
		id := fmt.Sprintf("run-%02d", i)
		wf := "flows.A"
		if i%3 == 0 {
			wf = "flows.B"
			ofB = append(ofB, id)
		}
		mustAppend(t, e.w, id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: wf}, worlds.Event{Type: worlds.EventRunStarted},
			worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "hook-" + id, Token: "tok-" + id})
		if i%2 == 0 { // every other run and hook as the unsharded version wrote it
			putLegacy(t, e, getMeta(t, e, "RUN#"+id), "RUNS", "RUNS#"+wf)
			putLegacy(t, e, getMeta(t, e, "HOOK#hook-"+id), "HOOKS", "HOOKS#"+id)
		}
		all, hooks = append(all, id), append(hooks, "hook-"+id)
		e.clock.Advance(time.Millisecond)
	}
	// A run of workflow "flows.B#1" written before sharding sits in partition
	// RUNS#flows.B#1, which is also shard 1 of flows.B: it must not leak.
	mustAppend(t, e.w, "run-collide", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.B#1"})
	putLegacy(t, e, getMeta(t, e, "RUN#run-collide"), "RUNS", "RUNS#flows.B#1")
	all = append(all, "run-collide")
	for _, s := range [][]string{all, ofB, hooks} {
		slices.Reverse(s)
	}
	pageRuns := func(f worlds.RunFilter) []string {
		var got []string
		for range 100 {
			p, err := e.w.ListRuns(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Items {
				got = append(got, r.RunID)
			}
			if p.Cursor == "" {
				return got
			}
			f.Cursor = p.Cursor
		}
		t.Fatal("listing never ended")
		return nil
	}
	pageHooks := func(f worlds.HookFilter) []string {
		var got []string
		for range 100 {
			p, err := e.w.ListHooks(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range p.Items {
				got = append(got, h.HookID)
			}
			if p.Cursor == "" {
				return got
			}
			f.Cursor = p.Cursor
		}
		t.Fatal("listing never ended")
		return nil
	}
	check := func(name string, list func() []string, want []string) {
		t.Helper()
		var got []string
		waitFor(t, name, func() bool { got = list(); return len(got) >= len(want) })
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", name, got, want)
		}
	}
	check("all runs", func() []string { return pageRuns(worlds.RunFilter{Limit: 4}) }, all)
	check("one workflow", func() []string { return pageRuns(worlds.RunFilter{Limit: 2, WorkflowName: "flows.B"}) }, ofB)
	check("colliding workflow", func() []string { return pageRuns(worlds.RunFilter{Limit: 2, WorkflowName: "flows.B#1"}) }, []string{"run-collide"})
	check("all hooks", func() []string { return pageHooks(worlds.HookFilter{Limit: 5}) }, hooks)
	check("one run's hooks", func() []string { return pageHooks(worlds.HookFilter{RunID: "run-04", Limit: 1}) }, []string{"hook-run-04"})

	// A cursor of the unsharded listing: the last key it returned.
	const k = 5
	last := getMeta(t, e, "RUN#"+all[k-1])
	b, _ := json.Marshal(map[string]string{"pk": "RUN#" + all[k-1], "sk": "META", "list_pk": "RUNS", "list_sk": last["list_sk"].(*ddbtypes.AttributeValueMemberS).Value})
	check("old cursor", func() []string {
		return pageRuns(worlds.RunFilter{Limit: 3, Cursor: base64.RawURLEncoding.EncodeToString(b)})
	}, all[k:])
	bad, _ := json.Marshal(map[string]string{"pk": "HOOK#x", "sk": "META", "list_pk": "HOOKS", "list_sk": "x"})
	var ae *worlds.ArgumentError
	if _, err := e.w.ListRuns(ctx, worlds.RunFilter{Cursor: base64.RawURLEncoding.EncodeToString(bad)}); !errors.As(err, &ae) || ae.Field != "Cursor" {
		t.Errorf("a hooks cursor for runs: %v, want an *ArgumentError on Cursor", err)
	}

	// Written again, a legacy run takes its sharded key: one key at a time.
	mustAppend(t, e.w, "run-00", worlds.Event{Type: worlds.EventRunCompleted})
	if pk := getMeta(t, e, "RUN#run-00")["list_pk"].(*ddbtypes.AttributeValueMemberS).Value; pk == "RUNS" {
		t.Fatalf("rewritten run kept list_pk %q", pk)
	}
	check("all runs after a rewrite", func() []string { return pageRuns(worlds.RunFilter{Limit: 4}) }, all)
	check("completed", func() []string {
		return pageRuns(worlds.RunFilter{Limit: 4, WorkflowName: "flows.B", Status: worlds.RunCompleted})
	}, []string{"run-00"})
}

// A queue record written before queue records were indexed has no list_pk, so
// Sweep cannot see it; IndexLegacyQueueRecords gives it its index entries once,
// and the next sweep sends it again.
func TestSweepFindsLegacyQueueRecordsOnceIndexed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	mustAppend(t, e.w, "legacy", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	queueUnsent(t, e, "legacy")
	putLegacy(t, e, queueRecord(t, e, "start-legacy"), "", "")
	e.clock.Advance(awsworld.DefaultLease + 5*time.Second)
	if res, err := e.w.Sweep(ctx, awsworld.SweepOptions{}); err != nil || res.Overdue != 0 {
		t.Fatalf("sweep before indexing = %+v, %v; want the legacy record invisible", res, err)
	}
	indexed, err := e.w.IndexLegacyQueueRecords(ctx)
	if err != nil || indexed != 1 {
		t.Fatalf("IndexLegacyQueueRecords = %d, %v; want 1", indexed, err)
	}
	if again, err := e.w.IndexLegacyQueueRecords(ctx); err != nil || again != 0 {
		t.Fatalf("second IndexLegacyQueueRecords = %d, %v; want 0", again, err)
	}
	var swept awsworld.SweepResult
	waitFor(t, "the sweep to see the indexed record", func() bool {
		swept, err = e.w.Sweep(ctx, awsworld.SweepOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return swept.Overdue > 0
	})
	if len(swept.Resent) != 1 || swept.Resent[0] != "start-legacy" {
		t.Fatalf("sweep = %+v, want start-legacy sent again", swept)
	}
	drain(t, e, awsworld.Queue(e.w, worlds.Runners(&stepRunner{})), map[string]string{e.arn: e.url}, runDone(t, e.w, "legacy"))
}
