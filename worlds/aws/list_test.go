package awsworld_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// Listings merge the shards of the list indexes in order: paging with a small
// limit through runs spread over the shards (filtered by workflow and status
// too) and hooks yields each exactly once, newest first.
func TestShardedListingsPageInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *env, c *awsworld.Config) { c.ListShards = 5 })
	ctx := context.Background()
	const n = 23
	var all, ofB, doneB, hooks []string
	for i := range n {
		id := fmt.Sprintf("run-%02d", i)
		wf := "flows.A"
		if i%3 == 0 {
			wf = "flows.B"
			ofB = append(ofB, id)
		}
		mustAppend(t, e.w, id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: wf}, worlds.Event{Type: worlds.EventRunStarted},
			worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "hook-" + id, Token: "tok-" + id})
		hooks = append(hooks, "hook-"+id)
		if wf == "flows.B" && i%2 == 0 {
			mustAppend(t, e.w, id, worlds.Event{Type: worlds.EventRunCompleted})
			doneB = append(doneB, id)
		}
		all = append(all, id)
		if i%4 != 0 { // some runs share a creation time; the ID orders them
			e.clock.Advance(time.Millisecond)
		}
	}
	// The index entries are spread over the shards, not one partition.
	out, err := e.db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(e.cfg.TableName), IndexName: aws.String("list")})
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[string]bool{}
	for _, item := range out.Items {
		if pk := item["list_pk"].(*ddbtypes.AttributeValueMemberS).Value; strings.HasPrefix(pk, "RUNS#") {
			partitions[pk] = true
		}
	}
	if len(partitions) != 5 {
		t.Fatalf("run index partitions %v, want the 5 shards", partitions)
	}
	for _, s := range [][]string{all, ofB, doneB, hooks} {
		slices.Reverse(s) // newest first
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
	for _, tc := range []struct {
		name string
		f    worlds.RunFilter
		want []string
	}{
		{"all", worlds.RunFilter{Limit: 4}, all},
		{"one workflow", worlds.RunFilter{Limit: 2, WorkflowName: "flows.B"}, ofB},
		{"one workflow, completed", worlds.RunFilter{Limit: 1, WorkflowName: "flows.B", Status: worlds.RunCompleted}, doneB},
	} {
		// Index membership is eventually consistent: wait for the full listing.
		var got []string
		waitFor(t, tc.name, func() bool { got = pageRuns(tc.f); return len(got) >= len(tc.want) })
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
	var got []string
	f := worlds.HookFilter{Limit: 6}
	for {
		p, err := e.w.ListHooks(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range p.Items {
			got = append(got, h.HookID)
		}
		if p.Cursor == "" {
			break
		}
		f.Cursor = p.Cursor
	}
	if !slices.Equal(got, hooks) {
		t.Errorf("hooks:\n got %v\nwant %v", got, hooks)
	}
}

// Worlds sharing a table with different ListShards (ListShards lowered, or an
// instance not yet redeployed while it is raised) list every run and hook and
// sweep every queue record, whichever wrote them: listings read as many shards
// as the most any World wrote with.
func TestListingsSurviveAListShardsChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(_ *env, c *awsworld.Config) { c.ListShards = 2 })
	ctx := context.Background()
	wide := e.cfg
	wide.ListShards = 9
	w9, err := awsworld.New(wide, e.db, crashingSQS{e.sqs})
	if err != nil {
		t.Fatal(err)
	}
	var runs, hooks []string
	for i := range 12 {
		w, id := worlds.World(e.w), fmt.Sprintf("run-%02d", i)
		if i%2 == 1 || i > 8 {
			w = w9
		}
		mustAppend(t, w, id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"},
			worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "hook-" + id, Token: "tok-" + id})
		runs, hooks = append(runs, id), append(hooks, "hook-"+id)
		e.clock.Advance(time.Millisecond)
	}
	// Queue records the wide World wrote, its messages lost.
	for i := range 6 {
		id := fmt.Sprintf("q-%d", i)
		if _, err := w9.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "flows.A", RunID: "run-00"}, worlds.QueueOptions{ID: id}); err == nil {
			t.Fatal("the crashed Queue call succeeded")
		}
	}
	slices.Reverse(runs)
	slices.Reverse(hooks)
	for _, w := range []*awsworld.World{e.w, w9} {
		for _, f := range []worlds.RunFilter{{Limit: 5}, {Limit: 3, WorkflowName: "flows.A"}} {
			var got []string
			waitFor(t, "runs listed", func() bool {
				got = nil
				for {
					p, err := w.ListRuns(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range p.Items {
						got = append(got, r.RunID)
					}
					if p.Cursor == "" {
						return len(got) >= len(runs)
					}
					f.Cursor = p.Cursor
				}
			})
			if !slices.Equal(got, runs) {
				t.Errorf("runs %+v:\n got %v\nwant %v", f, got, runs)
			}
		}
		p, err := w.ListHooks(ctx, worlds.HookFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range p.Items {
			got = append(got, h.HookID)
		}
		if !slices.Equal(got, hooks) {
			t.Errorf("hooks:\n got %v\nwant %v", got, hooks)
		}
	}
	e.clock.Advance(awsworld.DefaultLease + 5*time.Second)
	var res awsworld.SweepResult
	waitFor(t, "the narrow World's sweep to see every record", func() bool {
		res, err = e.w.Sweep(ctx, awsworld.SweepOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		return res.Overdue >= 6
	})
	if len(res.Resent) != 6 {
		t.Fatalf("sweep = %+v, want the 6 records", res)
	}
}
