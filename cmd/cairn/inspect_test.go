package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/cairn-go/cairn/internal/cli"
	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/local"
)

// seedWorld writes three runs through worlds.World.Append into a World file:
// a completed order run with a retried step, a hook and a stream; a failed run;
// and a pending run of another workflow.
func seedWorld(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cairn.db")
	w, err := local.Open(ctx, local.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	appendAll(t, w, "run-ok", seedOK...)
	if _, err := w.WriteStream(ctx, "run-ok", "progress", []byte("reserved 3 items"), []byte("charged")); err != nil {
		t.Fatal(err)
	}
	if err := w.CloseStream(ctx, "run-ok", "progress"); err != nil {
		t.Fatal(err)
	}
	appendAll(t, w, "run-ok", worlds.Event{Type: worlds.EventRunCompleted, Output: json.RawMessage(`{"tracking":"1Z"}`)})
	appendAll(t, w, "run-bad",
		worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "orders.Fulfil", Input: json.RawMessage(`{"id":"o2"}`)},
		worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventAttributesSet, Attributes: map[string]string{"customer": "c7", "tier": "gold"}},
		worlds.Event{Type: worlds.EventRunFailed, Error: &worlds.ErrorInfo{Message: "card declined", Fatal: true}},
	)
	appendAll(t, w, "run-wait",
		worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "reports.Build", Input: json.RawMessage(`{}`)},
		worlds.Event{Type: worlds.EventRunStarted},
		worlds.Event{Type: worlds.EventHookCreated, CorrelationID: "hook-2", Token: "approve-r1", Metadata: json.RawMessage(`{"purpose":"approval"}`)},
	)
	return path
}

var seedOK = []worlds.Event{
	{Type: worlds.EventRunCreated, WorkflowName: "orders.Fulfil", Input: json.RawMessage(`{"id":"o1"}`), Attributes: map[string]string{"customer": "c7"}},
	{Type: worlds.EventRunStarted},
	{Type: worlds.EventStepCreated, CorrelationID: "step-1", StepName: "charge card", Input: json.RawMessage(`{"amount":100}`)},
	{Type: worlds.EventStepStarted, CorrelationID: "step-1", Attempt: 1},
	{Type: worlds.EventStepRetrying, CorrelationID: "step-1", Error: &worlds.ErrorInfo{Message: "processor timed out"}, RetryAt: ptr(time.Now().Add(-time.Second))},
	{Type: worlds.EventStepStarted, CorrelationID: "step-1", Attempt: 2},
	{Type: worlds.EventStepCompleted, CorrelationID: "step-1", Output: json.RawMessage(`"ch_1"`)},
	{Type: worlds.EventHookCreated, CorrelationID: "hook-1", Token: "warehouse-o1"},
	{Type: worlds.EventHookReceived, CorrelationID: "hook-1", Payload: json.RawMessage(`{"packer":"Dana"}`)},
}

func ptr[T any](v T) *T { return &v }

func appendAll(t *testing.T, w worlds.World, runID string, evs ...worlds.Event) {
	t.Helper()
	for _, ev := range evs {
		if _, err := w.Append(context.Background(), runID, ev); err != nil {
			t.Fatalf("append %s to %s: %v", ev.Type, runID, err)
		}
	}
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestInspect(t *testing.T) {
	t.Parallel()
	db := seedWorld(t)
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string // substrings of stdout
		notWant []string
	}{
		{"runs", []string{"runs"}, []string{"RUN ID", "run-ok", "run-bad", "run-wait", "completed", "card declined"}, []string{"next page"}},
		{"runs by workflow", []string{"runs", "--workflow", "reports.Build"}, []string{"run-wait"}, []string{"run-ok", "run-bad"}},
		{"runs by status", []string{"runs", "--status=failed"}, []string{"run-bad"}, []string{"run-ok", "run-wait"}},
		{"runs since an hour ago", []string{"runs", "--since", "1h"}, []string{"run-ok", "run-bad", "run-wait"}, nil},
		{"runs until long ago", []string{"runs", "--until", "2000-01-01"}, []string{"no runs"}, []string{"run-ok"}},
		{"runs by attribute", []string{"runs", "--attr", "customer=c7"}, []string{"run-ok", "run-bad"}, []string{"run-wait"}},
		{"runs by two attributes", []string{"runs", "--attr", "customer=c7", "--attr=tier=gold"}, []string{"run-bad"}, []string{"run-ok", "run-wait"}},
		{"runs by attribute, none", []string{"runs", "--attr", "customer=c8"}, []string{"no runs"}, []string{"run-ok"}},
		{"runs one page", []string{"runs", "--limit", "1"}, []string{"run-wait", "next page: --cursor "}, []string{"run-ok", "run-bad"}},
		{"runs all pages", []string{"runs", "--limit", "1", "--all"}, []string{"run-wait", "run-bad", "run-ok"}, []string{"next page"}},
		{"run", []string{"run", "run-ok"}, []string{"Status:", "completed", `{"tracking":"1Z"}`, "Attribute customer:", "c7"}, nil},
		{"run flags after id", []string{"run", "run-bad", "--db", db}, []string{"failed", "card declined"}, nil},
		{"steps", []string{"steps", "run-ok"}, []string{"step-1", "charge card", "completed", "2"}, nil},
		{"events", []string{"events", "run-ok"}, []string{"SEQ", "run_created", "step_retrying", "processor timed out", "run_completed"}, nil},
		{"hooks", []string{"hooks"}, []string{"hook-1", "hook-2", "approve-r1", "approval"}, nil},
		{"hooks of a run", []string{"hooks", "--run", "run-wait"}, []string{"hook-2"}, []string{"hook-1"}},
		{"active hooks", []string{"hooks", "--status", "active"}, []string{"hook-2"}, []string{"hook-1"}},
		{"streams", []string{"streams", "run-ok"}, []string{"progress", "2", "true"}, nil},
		{"stream chunks", []string{"streams", "run-ok", "--name", "progress"}, []string{"0\treserved 3 items", "1\tcharged", "stream closed"}, nil},
		{"stream chunks from", []string{"streams", "run-ok", "--name", "progress", "--from", "1"}, []string{"1\tcharged"}, []string{"reserved"}},
		{"no streams", []string{"streams", "run-bad"}, []string{"no streams"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, append([]string{"inspect", "--db", db}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if errOut != "" {
				t.Errorf("stderr %q, want nothing (not a terminal)", errOut)
			}
			for _, s := range tc.want {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(out, s) {
					t.Errorf("stdout has %q:\n%s", s, out)
				}
			}
		})
	}
}

func TestInspectJSONAndCursor(t *testing.T) {
	t.Parallel()
	db := seedWorld(t)
	var ids []string
	cursor := ""
	for range 5 {
		args := []string{"inspect", "runs", "--db", db, "--json", "--limit", "2"}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		code, out, errOut := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var page worlds.Page[worlds.Run]
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		for _, r := range page.Items {
			ids = append(ids, r.RunID)
		}
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	if got, want := strings.Join(ids, ","), "run-wait,run-bad,run-ok"; got != want {
		t.Fatalf("paged runs %s, want %s (newest first, each once)", got, want)
	}

	code, out, _ := runCLI(t, "inspect", "events", "run-ok", "--db", db, "--json")
	var events worlds.Page[worlds.Event]
	if code != 0 || json.Unmarshal([]byte(out), &events) != nil {
		t.Fatalf("events --json: exit %d, %s", code, out)
	}
	if len(events.Items) != len(seedOK)+1 || events.Items[0].Type != worlds.EventRunCreated {
		t.Fatalf("got %d events starting %v, want %d starting run_created", len(events.Items), events.Items[0].Type, len(seedOK)+1)
	}
	code, out, _ = runCLI(t, "inspect", "streams", "run-ok", "--db", db, "--json", "--name", "progress")
	var sp worlds.StreamPage
	if code != 0 || json.Unmarshal([]byte(out), &sp) != nil || len(sp.Chunks) != 2 || !sp.Closed || string(sp.Chunks[1].Data) != "charged" {
		t.Fatalf("stream --json: exit %d, %s", code, out)
	}
	code, out, _ = runCLI(t, "inspect", "hooks", "--db", db, "--json")
	var hooks worlds.Page[worlds.Hook]
	if code != 0 || json.Unmarshal([]byte(out), &hooks) != nil || len(hooks.Items) != 2 {
		t.Fatalf("hooks --json: exit %d, %s", code, out)
	}
}

func TestInspectBadInput(t *testing.T) {
	t.Parallel()
	db := seedWorld(t)
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte("this is not a database, just some text long enough to have a header"), 0o600); err != nil {
		t.Fatal(err)
	}
	future := filepath.Join(dir, "future.db")
	writeFutureWorld(t, future)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no subject", []string{"--db", db}, 2, "missing what to inspect"},
		{"unknown subject", []string{"flows", "--db", db}, 2, `unknown subject "flows"`},
		{"missing run id", []string{"steps", "--db", db}, 2, "steps needs a run ID"},
		{"extra argument", []string{"run", "a", "b", "--db", db}, 2, `unexpected argument "b"`},
		{"unknown flag", []string{"runs", "--colour", "--db", db}, 2, "flag provided but not defined: -colour"},
		{"bad limit", []string{"runs", "--limit", "-3", "--db", db}, 2, "--limit -3"},
		{"huge limit", []string{"runs", "--limit", "5000", "--db", db}, 2, "--limit 5000"},
		{"bad status", []string{"runs", "--status", "stuck", "--db", db}, 2, `--status "stuck"`},
		{"bad hook status", []string{"hooks", "--status", "failed", "--db", db}, 2, "active or disposed"},
		{"bad since", []string{"runs", "--since", "yesterday", "--db", db}, 2, `--since "yesterday"`},
		{"all with cursor", []string{"runs", "--all", "--cursor", "x", "--db", db}, 2, "exclude each other"},
		{"bad cursor", []string{"runs", "--cursor", "garbage!", "--db", db}, 1, "garbage!"},
		{"unknown run", []string{"run", "nope", "--db", db}, 1, `run "nope" not found`},
		{"unknown run steps", []string{"steps", "nope", "--db", db}, 1, `run "nope" not found`},
		{"unknown run events", []string{"events", "nope", "--db", db}, 1, `run "nope" not found`},
		{"unknown stream", []string{"streams", "run-ok", "--name", "logs", "--db", db}, 1, `no stream "logs"`},
		{"no world", []string{"runs"}, 1, "no World given"},
		{"missing file", []string{"runs", "--db", filepath.Join(dir, "missing.db")}, 1, "no World file at"},
		{"directory", []string{"runs", "--db", dir}, 1, "is a directory"},
		{"not a database", []string{"runs", "--db", notDB}, 1, "cannot open World file"},
		{"other version", []string{"runs", "--db", future}, 1, "written by another version of cairn"},
		{"aws without table", []string{"runs", "--aws"}, 1, "no table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := inspectCode(t, tc.args, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errb.String())
			}
			first, _, _ := strings.Cut(errb.String(), "\n")
			if !strings.HasPrefix(first, "cairn inspect: ") || !strings.Contains(first, tc.want) {
				t.Fatalf("first stderr line %q, want it to name %q", first, tc.want)
			}
			if n := strings.Count(errb.String(), "\n"); n > 2 || strings.Contains(errb.String(), "goroutine") {
				t.Fatalf("stderr is not a short message:\n%s", errb.String())
			}
		})
	}
}

// inspectCode runs inspect with an empty environment, so CAIRN_DB and the
// WORKFLOW_* variables of the machine do not leak in.
func inspectCode(t *testing.T, args []string, stdout, stderr *bytes.Buffer) int {
	t.Helper()
	err := inspectErr(context.Background(), args, stdout, stderr, func(string) string { return "" })
	if err == nil {
		return 0
	}
	// Same mapping as inspect, which reads the real environment.
	var buf bytes.Buffer
	code := reportInspectError(&buf, err)
	stderr.Write(buf.Bytes())
	return code
}

// writeFutureWorld makes a World file as a newer cairn would leave it: a schema
// version this build does not read.
func writeFutureWorld(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		`INSERT INTO meta (key, value) VALUES ('schema_version', '99')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInspectProgressGoesToItsWriterOnly(t *testing.T) {
	t.Parallel()
	db := seedWorld(t)
	var out, prog bytes.Buffer
	if err := inspectWith(context.Background(), []string{"runs", "--db", db, "--all", "--limit", "1"}, &out, func(string) string { return "" }, cli.ForceProgress(&prog)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"opening the World", "reading runs: page 1 (0 so far)", "reading runs: page 3 (2 so far)"} {
		if !strings.Contains(prog.String(), want) {
			t.Errorf("progress %q lacks %q", prog.String(), want)
		}
	}
	if !strings.HasSuffix(prog.String(), "\r") {
		t.Errorf("progress line not cleared at the end: %q", prog.String())
	}
	if strings.Contains(out.String(), "\r") || strings.Count(out.String(), "run-") != 3 {
		t.Errorf("stdout %q: want the three runs and no progress", out.String())
	}
}

// A malformed --attr is bad usage (exit 2), named in the message.
func TestInspectAttrUsage(t *testing.T) {
	t.Parallel()
	db := seedWorld(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "--attr", "customer"}, "want key=value"},
		{[]string{"runs", "--attr", "=c7"}, "want key=value"},
		{[]string{"runs", "--attr", "a=1", "--attr", "a=2"}, "a given twice"},
		{[]string{"runs", "--attr", "a\x01=1"}, "control characters"},
		{[]string{"hooks", "--attr", "a=1"}, "--attr filters runs, not hooks"},
	} {
		code, _, errOut := runCLI(t, append([]string{"inspect", "--db", db}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("inspect %q: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
