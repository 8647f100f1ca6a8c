package awsworld_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

// txnCounter records the puts of every transaction it passes on.
type txnCounter struct {
	*dynamodb.Client
	mu   sync.Mutex
	puts [][]string // sort keys of each transaction's puts
}

func (c *txnCounter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	var sks []string
	for _, a := range in.TransactItems {
		if a.Put != nil {
			sks = append(sks, a.Put.Item["sk"].(*ddbtypes.AttributeValueMemberS).Value)
		}
	}
	c.mu.Lock()
	c.puts = append(c.puts, sks)
	c.mu.Unlock()
	return c.Client.TransactWriteItems(ctx, in, opts...)
}

func (c *txnCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.puts)
}

func (c *txnCounter) since(i int) [][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]string(nil), c.puts[i:]...)
}

func (c *txnCounter) last() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.puts[len(c.puts)-1]
}

func attrPuts(sks []string) string {
	var out []string
	for _, sk := range sks {
		if strings.HasPrefix(sk, "ATTR#") {
			out = append(out, sk)
		}
	}
	return strings.Join(out, ",")
}

// An append writes, in its transaction, one attribute item per attribute whose
// value it changes, and none for an unchanged one; the run's view is read
// back from them by the listing.
func TestAttributeItemsPerChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	counter := &txnCounter{Client: e.db}
	w, err := awsworld.New(e.cfg, counter, e.sqs)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, "r", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Attributes: map[string]string{"a": "1", "b": "2"}})
	if got := attrPuts(counter.last()); got != "ATTR#a,ATTR#b" {
		t.Fatalf("run_created wrote attribute items %q, want ATTR#a,ATTR#b", got)
	}
	before := counter.count()
	mustAppend(t, w, "r", worlds.Event{Type: worlds.EventRunStarted})
	for _, sks := range counter.since(before) {
		if got := attrPuts(sks); got != "" {
			t.Fatalf("run_started wrote attribute items %q", got)
		}
	}
	mustAppend(t, w, "r", worlds.Event{Type: worlds.EventAttributesSet, CorrelationID: "attrs_0_1", Attributes: map[string]string{"a": "1", "b": "3"}},
		worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"b": "4", "c": "5"}})
	if got := attrPuts(counter.last()); got != "ATTR#b,ATTR#c" {
		t.Fatalf("changing b twice and adding c wrote %q, want ATTR#b,ATTR#c once each", got)
	}
	for attrs, want := range map[string]int{"b=4": 1, "b=3": 0, "b=2": 0, "a=1": 1} {
		k, v, _ := strings.Cut(attrs, "=")
		page, err := w.ListRuns(ctx, worlds.RunFilter{Attributes: map[string]string{k: v}})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != want {
			t.Errorf("runs with %s: %d, want %d", attrs, len(page.Items), want)
		}
	}
}

// A run written before the attrs index existed has no attribute items:
// IndexRunAttributes gives it them, and listings by attribute find it.
func TestIndexRunAttributes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	mustAppend(t, e.w, "old", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Attributes: map[string]string{"tenant": "t1", "tier": "gold"}})
	mustAppend(t, e.w, "bare", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A"})
	for _, k := range []string{"tenant", "tier"} {
		if _, err := e.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(e.cfg.TableName),
			Key: map[string]ddbAttr{"pk": ddbS("RUN#old"), "sk": ddbS("ATTR#" + k)}}); err != nil {
			t.Fatal(err)
		}
	}
	filter := worlds.RunFilter{Attributes: map[string]string{"tenant": "t1", "tier": "gold"}}
	if page, err := e.w.ListRuns(ctx, filter); err != nil || len(page.Items) != 0 {
		t.Fatalf("before indexing: %+v, %v; want no run", page.Items, err)
	}
	n, err := e.w.IndexRunAttributes(ctx)
	if err != nil || n != 1 {
		t.Fatalf("IndexRunAttributes = %d, %v; want 1 run", n, err)
	}
	page, err := e.w.ListRuns(ctx, filter)
	if err != nil || len(page.Items) != 1 || page.Items[0].RunID != "old" {
		t.Fatalf("after indexing: %+v, %v; want run old", page.Items, err)
	}
	if n, err := e.w.IndexRunAttributes(ctx); err != nil || n != 1 {
		t.Fatalf("IndexRunAttributes again = %d, %v; want the same run, rewritten", n, err)
	}
}

// A table created before the attrs index existed still takes writes; a
// listing by attribute says what index it lacks.
func TestListByAttributesWithoutIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	db := testenv.DynamoDB(t)
	table := testenv.UniqueName(t, "old")
	str := ddbtypes.ScalarAttributeTypeS
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table), BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: str}, {AttributeName: aws.String("sk"), AttributeType: str}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: ddbtypes.KeyTypeRange}},
	}); err != nil {
		t.Fatal(err)
	}
	testenv.DeleteTableOnCleanup(t, db, table)
	cfg := e.cfg
	cfg.TableName = table
	w, err := awsworld.New(cfg, db, e.sqs)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, "r", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "flows.A", Attributes: map[string]string{"a": "1"}})
	_, err = w.ListRuns(ctx, worlds.RunFilter{Attributes: map[string]string{"a": "1"}})
	if err == nil || !strings.Contains(err.Error(), `no "attrs" index`) {
		t.Fatalf("listing by attribute without the index: %v", err)
	}
}
