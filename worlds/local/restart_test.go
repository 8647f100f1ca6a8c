package local_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

func TestRestartKeepsStateAndDeliveries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "restart.db")
	cfg := local.Config{Path: path, PollInterval: 20 * time.Millisecond}

	w1, err := local.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w1.Append(ctx, "r", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "wf"}, worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventStepCreated, CorrelationID: "s1", StepName: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w1.WriteStream(ctx, "r", "out", []byte("one")); err != nil {
		t.Fatal(err)
	}
	in := worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r"}
	due := time.Now().Add(300 * time.Millisecond)
	if _, err := w1.Queue(ctx, in, worlds.QueueOptions{ID: "later", DueAt: due}); err != nil {
		t.Fatal(err)
	}
	if _, err := w1.Queue(ctx, in, worlds.QueueOptions{ID: "now"}); err != nil {
		t.Fatal(err)
	}
	if err := w1.Close(); err != nil { // the process goes away before serving anything
		t.Fatal(err)
	}

	w2 := open(t, cfg)
	run, err := w2.GetRun(ctx, "r")
	if err != nil || run.Status != worlds.RunRunning || run.EventCount != 3 {
		t.Fatalf("run after restart %+v, %v", run, err)
	}
	if p, err := w2.ReadStream(ctx, "r", "out", 0, 0); err != nil || len(p.Chunks) != 1 {
		t.Fatalf("stream after restart %+v, %v", p, err)
	}
	var mu sync.Mutex
	got := map[string]time.Time{}
	all := make(chan struct{})
	stop := local.ServeInTest(t, w2, runnerFunc(func(ctx context.Context, w worlds.World, d worlds.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		got[d.ID] = time.Now()
		if len(got) == 2 {
			close(all)
		}
		return nil
	}))
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatalf("deliveries after restart: %v", got)
	}
	stop()
	if got["later"].Before(due) {
		t.Errorf("delivery due %v ran at %v", due, got["later"])
	}
	// Appends continue the log where it stopped.
	out, err := w2.Append(ctx, "r", worlds.Event{Type: worlds.EventStepStarted, CorrelationID: "s1", Attempt: 1})
	if err != nil || out[0].Seq != 4 {
		t.Fatalf("append after restart %+v, %v", out, err)
	}
}

func TestTwoWorldsOnOneFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	a := open(t, local.Config{Path: path})
	b := open(t, local.Config{Path: path})
	if _, err := a.Append(ctx, "r", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "wf"}); err != nil {
		t.Fatal(err)
	}
	const per = 8
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		w := a
		if g%2 == 1 {
			w = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				ev := worlds.Event{Type: worlds.EventStepCreated, CorrelationID: fmt.Sprintf("g%02d-%02d", g, i), StepName: "s"}
				if _, err := w.Append(ctx, "r", ev); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	evs, err := worlds.AllEvents(ctx, b, "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+16*per {
		t.Fatalf("%d events, want %d", len(evs), 1+16*per)
	}
	next := map[int]int{}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("seq %d at %d", e.Seq, i)
		}
		if i == 0 {
			continue
		}
		var g, n int
		fmt.Sscanf(e.CorrelationID, "g%02d-%02d", &g, &n)
		if n != next[g] {
			t.Fatalf("writer %d reordered: %d before %d", g, n, next[g])
		}
		next[g]++
	}
	// A delivery queued by one process is served by the other.
	if _, err := a.Queue(ctx, worlds.QueueInput{Kind: worlds.DeliverWorkflow, WorkflowName: "wf", RunID: "r"}, worlds.QueueOptions{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	local.ServeInTest(t, b, runnerFunc(func(ctx context.Context, w worlds.World, d worlds.Delivery) error {
		got <- d.ID
		return nil
	}))
	select {
	case id := <-got:
		if id != "x" {
			t.Errorf("delivery %q", id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("delivery queued by another World on the file not served")
	}
}

func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v.db")
	w, err := local.Open(ctx, local.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE meta SET value = '99' WHERE key = 'schema_version'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = local.Open(ctx, local.Config{Path: path})
	if !errors.Is(err, local.ErrSchemaVersion) {
		t.Fatalf("Open of a version 99 file: %v, want ErrSchemaVersion", err)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg   local.Config
		field string
	}{
		{local.Config{}, "local.Config.Path"},
		{local.Config{Path: local.Memory, Workers: -1}, "local.Config.Workers"},
		{local.Config{Path: local.Memory, PollInterval: -time.Second}, "local.Config.PollInterval"},
		{local.Config{Path: local.Memory, Lease: time.Microsecond}, "local.Config.Lease"},
		{local.Config{Path: local.Memory, Retention: -1}, "local.Config.Retention"},
		{local.Config{Path: local.Memory, MaxStreamWrite: -1}, "local.Config.MaxStreamWrite"},
		{local.Config{Path: local.Memory, BusyTimeout: -1}, "local.Config.BusyTimeout"},
		{local.Config{Path: local.Memory, MaxDelay: -1}, "local.Config.MaxDelay"},
	} {
		_, err := local.Open(context.Background(), tc.cfg)
		var ae *worlds.ArgumentError
		if !errors.As(err, &ae) || ae.Field != tc.field || !errors.Is(err, worlds.ErrInvalidArgument) {
			t.Errorf("Open(%+v) = %v, want an ArgumentError for %s", tc.cfg, err, tc.field)
		}
	}
	if _, err := local.Open(context.Background(), local.Config{Path: filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")}); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}

func TestServeRunnerNil(t *testing.T) {
	t.Parallel()
	w := open(t, local.Config{Path: local.Memory})
	if err := w.Serve(context.Background(), nil); !errors.Is(err, worlds.ErrInvalidArgument) {
		t.Fatalf("Serve(nil) = %v", err)
	}
}

func TestServeStopsWhenClosed(t *testing.T) {
	t.Parallel()
	w, err := local.Open(context.Background(), local.Config{Path: local.Memory, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- w.Serve(context.Background(), runnerFunc(func(context.Context, worlds.World, worlds.Delivery) error { return nil }))
	}()
	time.Sleep(50 * time.Millisecond)
	w.Close()
	select {
	case err := <-done:
		if !errors.Is(err, local.ErrClosed) {
			t.Fatalf("Serve after Close = %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve kept running on a closed World")
	}
}

func TestOpenNotADatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(path, []byte("this is not an SQLite database, just some bytes that are long enough"), 0o600); err != nil {
		t.Fatal(err)
	}
	if w, err := local.Open(context.Background(), local.Config{Path: path}); err == nil {
		w.Close()
		t.Fatal("Open of a junk file succeeded")
	}
}

// With almost no busy timeout, writers on two Worlds sharing a file collide in
// SQLite's lock: each append either succeeds or fails with ErrAppendContention,
// and the log holds exactly the successful ones, contiguous.
func TestLockContentionIsReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "busy.db")
	a := open(t, local.Config{Path: path, BusyTimeout: time.Millisecond})
	b := open(t, local.Config{Path: path, BusyTimeout: time.Millisecond})
	if _, err := a.Append(ctx, "r", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "wf"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	stored := map[string]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		w := a
		if g%2 == 1 {
			w = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				id := fmt.Sprintf("g%d-%d", g, i)
				_, err := w.Append(ctx, "r", worlds.Event{Type: worlds.EventStepCreated, CorrelationID: id, StepName: "s"})
				switch {
				case err == nil:
					mu.Lock()
					stored[id] = true
					mu.Unlock()
				case errors.Is(err, worlds.ErrAppendContention):
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	evs, err := worlds.AllEvents(ctx, a, "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+len(stored) {
		t.Fatalf("log has %d events, %d appends succeeded", len(evs)-1, len(stored))
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || (i > 0 && !stored[e.CorrelationID]) {
			t.Fatalf("event %d: seq %d id %s", i, e.Seq, e.CorrelationID)
		}
	}
	t.Logf("%d of 160 appends succeeded under lock contention", len(stored))
}

// TestMigrateAttributes opens a version 1 file, written before the
// run_attributes index existed: Open indexes its runs' attributes, so they are
// listed by attribute like runs written after.
func TestMigrateAttributes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	w, err := local.Open(ctx, local.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, "old", worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "wf", Attributes: map[string]string{"tenant": "a"}},
		worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"tier": "gold"}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// Back to the version 1 layout: no run_attributes table.
	for _, q := range []string{`DROP TABLE run_attributes`, `UPDATE meta SET value = '1' WHERE key = 'schema_version'`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	w, err = local.Open(ctx, local.Config{Path: path})
	if err != nil {
		t.Fatalf("Open of a version 1 file: %v", err)
	}
	defer w.Close()
	page, err := w.ListRuns(ctx, worlds.RunFilter{Attributes: map[string]string{"tenant": "a", "tier": "gold"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].RunID != "old" {
		t.Fatalf("runs of the migrated file with tenant=a tier=gold: %+v", page.Items)
	}
	db, err = sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&v); err != nil || v != strconv.Itoa(local.SchemaVersion) {
		t.Fatalf("schema version after migration = %q (%v), want %d", v, err, local.SchemaVersion)
	}
}
