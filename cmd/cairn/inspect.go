package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairn-go/cairn/internal/cli"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
)

const inspectUsage = `usage: cairn inspect <runs|run ID|steps ID|events ID|hooks|streams ID> [flags]
  World:   --db PATH (default $CAIRN_DB) | --aws [--table T] [--region R]
           (--table defaults to $WORKFLOW_TABLE; DYNAMODB_ENDPOINT points at
           DynamoDB Local or another endpoint; credentials as for the AWS CLI)
  Filters: --workflow NAME --status STATUS --since T --until T (RFC 3339 or a duration ago, e.g. 2h)
           --attr KEY=VALUE (runs; repeatable: every pair must match exactly)
           --run ID (hooks) --name STREAM --from N (streams: print chunks)
  Paging:  --limit N --cursor C --all
  Output:  --json
  Exit status: 0 on success, 1 when reading fails (no such run, World or table),
  2 for bad usage.`

// inspectOptions are the parsed flags of `cairn inspect`.
type inspectOptions struct {
	world      worldFlags
	jsonOut    bool
	workflow   string
	status     string
	since      string
	until      string
	runID      string
	streamName string
	from       int
	limit      int
	cursor     string
	all        bool
	attrs      attrFlag
}

// attrFlag collects repeated --attr KEY=VALUE flags.
type attrFlag map[string]string

func (f *attrFlag) String() string { return fmt.Sprint(map[string]string(*f)) }

func (f *attrFlag) Set(s string) error {
	k, v, err := worlds.ParseAttributePair(s)
	if err != nil {
		return err
	}
	if *f == nil {
		*f = attrFlag{}
	}
	if old, dup := (*f)[k]; dup && old != v {
		return fmt.Errorf("%s given twice, as %q and %q: a run has one value per key", k, old, v)
	}
	(*f)[k] = v
	return nil
}

// usageError is bad command-line input: it exits 2 instead of 1.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// notFoundError names what the user asked for and the World does not have.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// parseInterleaved parses flags that may appear before, between or after the
// positional arguments, which the flag package alone stops at.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseTime accepts RFC 3339 (or a bare date) or a duration meaning that long before now.
func parseTime(flagName, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, usageErrorf("--%s %q: a duration ago must not be negative", flagName, v)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usageErrorf("--%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z), a date, or a duration ago (90m)", flagName, v)
}

func inspect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := inspectErr(ctx, args, stdout, stderr, os.Getenv)
	if err == nil {
		return 0
	}
	return reportInspectError(stderr, err)
}

// reportInspectError prints err as one line and returns the exit code: 2 for
// bad usage, 1 for everything else.
func reportInspectError(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "cairn inspect:", cli.OneLine(err))
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "run 'cairn inspect -h' for usage")
		return 2
	}
	return 1
}

func inspectErr(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	return inspectWith(ctx, args, stdout, getenv, cli.NewProgress(stderr))
}

// inspectWith runs `cairn inspect` showing progress on prog.
func inspectWith(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string, prog *cli.Progress) error {
	var o inspectOptions
	fs := flag.NewFlagSet("cairn inspect", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.world.registerReadOnly(fs)
	fs.BoolVar(&o.jsonOut, "json", false, "print JSON instead of a table")
	fs.StringVar(&o.workflow, "workflow", "", "only runs of this workflow")
	fs.StringVar(&o.status, "status", "", "only runs (or hooks) with this status")
	fs.StringVar(&o.since, "since", "", "only runs created after this time")
	fs.StringVar(&o.until, "until", "", "only runs created before this time")
	fs.StringVar(&o.runID, "run", "", "hooks: only hooks of this run")
	fs.StringVar(&o.streamName, "name", "", "streams: print the chunks of this stream")
	fs.IntVar(&o.from, "from", 0, "streams: first chunk index to print")
	fs.IntVar(&o.limit, "limit", 0, fmt.Sprintf("page size (default %d, at most %d)", worlds.DefaultPageSize, worlds.MaxPageSize))
	fs.StringVar(&o.cursor, "cursor", "", "continue a listing from the cursor a previous page printed")
	fs.BoolVar(&o.all, "all", false, "fetch every page")
	fs.Var(&o.attrs, "attr", "runs: only runs with attribute KEY=VALUE (repeatable)")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, inspectUsage)
		return nil
	}
	if err != nil {
		return &usageError{msg: err.Error()}
	}
	if len(pos) == 0 {
		return usageErrorf("missing what to inspect: runs, run, steps, events, hooks or streams")
	}
	what, rest := pos[0], pos[1:]
	wantArgs := map[string]int{"runs": 0, "hooks": 0, "run": 1, "steps": 1, "events": 1, "streams": 1}
	n, known := wantArgs[what]
	switch {
	case !known:
		return usageErrorf("unknown subject %q: want runs, run, steps, events, hooks or streams", what)
	case len(rest) < n:
		return usageErrorf("%s needs a run ID", what)
	case len(rest) > n:
		return usageErrorf("unexpected argument %q", rest[n])
	}
	if o.limit < 0 || o.limit > worlds.MaxPageSize {
		return usageErrorf("--limit %d: must be between 1 and %d", o.limit, worlds.MaxPageSize)
	}
	if o.from < 0 {
		return usageErrorf("--from %d: must not be negative", o.from)
	}
	if o.all && o.cursor != "" {
		return usageErrorf("--all and --cursor exclude each other")
	}
	if len(o.attrs) > 0 && what != "runs" {
		return usageErrorf("--attr filters runs, not %s", what)
	}
	if err := worlds.ValidateAttributeFilter(o.attrs); err != nil {
		return usageErrorf("--attr: %v", err)
	}
	if o.status != "" {
		if what == "hooks" {
			if s := worlds.HookStatus(o.status); s != worlds.HookActive && s != worlds.HookDisposed {
				return usageErrorf("--status %q: hooks are active or disposed", o.status)
			}
		} else if !worlds.RunStatus(o.status).Valid() {
			return usageErrorf("--status %q: want pending, running, completed, failed or cancelled", o.status)
		}
	}
	now := time.Now()
	since, err := parseTime("since", o.since, now)
	if err != nil {
		return err
	}
	until, err := parseTime("until", o.until, now)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	defer prog.Done()
	prog.Update("opening the World…")
	w, closeWorld, err := o.world.open(ctx, getenv)
	if err != nil {
		return err
	}
	defer closeWorld()
	in := &inspector{w: w, o: o, out: stdout, prog: prog}
	err = inspectWorld(ctx, in, what, rest, since, until)
	if err != nil && !errors.As(err, new(*usageError)) && !errors.As(err, new(*notFoundError)) {
		return fmt.Errorf("reading the World: %w", err)
	}
	return err
}

func inspectWorld(ctx context.Context, in *inspector, what string, rest []string, since, until time.Time) error {
	w, o, stdout, prog := in.w, in.o, in.out, in.prog

	switch what {
	case "runs":
		return listPages(ctx, in, "runs", func(ctx context.Context, cursor string) (worlds.Page[worlds.Run], error) {
			return w.ListRuns(ctx, worlds.RunFilter{
				WorkflowName: o.workflow, Status: worlds.RunStatus(o.status),
				CreatedAfter: since, CreatedBefore: until, Attributes: o.attrs, Limit: o.limit, Cursor: cursor,
			})
		}, printRuns)
	case "hooks":
		return listPages(ctx, in, "hooks", func(ctx context.Context, cursor string) (worlds.Page[worlds.Hook], error) {
			p, err := w.ListHooks(ctx, worlds.HookFilter{RunID: o.runID, Limit: o.limit, Cursor: cursor})
			if err != nil || o.status == "" {
				return p, err
			}
			kept := p.Items[:0]
			for _, h := range p.Items {
				if string(h.Status) == o.status {
					kept = append(kept, h)
				}
			}
			p.Items = kept
			return p, nil
		}, printHooks)
	}

	runID := rest[0]
	run, err := w.GetRun(ctx, runID)
	if err != nil {
		if errors.Is(err, worlds.ErrNotFound) {
			return &notFoundError{fmt.Sprintf("run %q not found", runID)}
		}
		return err
	}
	switch what {
	case "run":
		prog.Done()
		if o.jsonOut {
			return writeJSON(stdout, run)
		}
		printRun(stdout, run)
		return printLinks(ctx, stdout, w, run)
	case "steps":
		return listPages(ctx, in, "steps", func(ctx context.Context, cursor string) (worlds.Page[worlds.Step], error) {
			return w.ListSteps(ctx, runID, worlds.ListFilter{Limit: o.limit, Cursor: cursor})
		}, printSteps)
	case "events":
		return listPages(ctx, in, "events", func(ctx context.Context, cursor string) (worlds.Page[worlds.Event], error) {
			return w.ListEvents(ctx, runID, worlds.EventFilter{Limit: o.limit, Cursor: cursor})
		}, printEvents)
	default: // streams
		if o.streamName != "" {
			return in.streamChunks(ctx, runID)
		}
		infos, err := w.ListStreams(ctx, runID)
		if err != nil {
			return err
		}
		prog.Done()
		if o.jsonOut {
			return writeJSON(stdout, worlds.Page[worlds.StreamInfo]{Items: nonNil(infos)})
		}
		printStreams(stdout, infos)
		return nil
	}
}

type inspector struct {
	w    worlds.World
	o    inspectOptions
	out  io.Writer
	prog *cli.Progress
}

// listPages fetches one page (or every page with --all) and prints it, with the
// cursor of the next page so the user can continue.
func listPages[T any](ctx context.Context, in *inspector, noun string, fetch func(context.Context, string) (worlds.Page[T], error), print func(io.Writer, []T)) error {
	cursor := in.o.cursor
	var items []T
	for page := 1; ; page++ {
		in.prog.Update("reading %s: page %d (%d so far)…", noun, page, len(items))
		p, err := fetch(ctx, cursor)
		if err != nil {
			if errors.Is(err, worlds.ErrInvalidArgument) && cursor != "" {
				return &notFoundError{fmt.Sprintf("--cursor %q is not a cursor of this listing: %v", cursor, err)}
			}
			return err
		}
		items = append(items, p.Items...)
		cursor = p.Cursor
		if !in.o.all || cursor == "" {
			break
		}
	}
	in.prog.Done()
	if in.o.jsonOut {
		return writeJSON(in.out, worlds.Page[T]{Items: nonNil(items), Cursor: cursor})
	}
	if len(items) == 0 {
		fmt.Fprintf(in.out, "no %s\n", noun)
	} else {
		print(in.out, items)
	}
	if cursor != "" {
		fmt.Fprintf(in.out, "next page: --cursor %s\n", cursor)
	}
	return nil
}

func (in *inspector) streamChunks(ctx context.Context, runID string) error {
	limit := in.o.limit
	if limit == 0 {
		limit = worlds.DefaultPageSize
	}
	from := in.o.from
	var chunks []worlds.Chunk
	var last worlds.StreamPage
	for {
		in.prog.Update("reading stream %s from chunk %d…", in.o.streamName, from)
		p, err := in.w.ReadStream(ctx, runID, in.o.streamName, from, limit)
		if err != nil {
			if errors.Is(err, worlds.ErrStreamNotFound) {
				return &notFoundError{fmt.Sprintf("run %s has no stream %q", runID, in.o.streamName)}
			}
			return err
		}
		chunks = append(chunks, p.Chunks...)
		last = p
		from = p.Next
		if !in.o.all || len(p.Chunks) == 0 || p.Closed && len(p.Chunks) < limit {
			break
		}
	}
	in.prog.Done()
	if in.o.jsonOut {
		last.Chunks = nonNil(chunks)
		return writeJSON(in.out, last)
	}
	for _, c := range chunks {
		fmt.Fprintf(in.out, "%d\t%s\n", c.Index, printable(c.Data))
	}
	switch {
	case last.Closed && len(chunks) == 0:
		fmt.Fprintf(in.out, "stream closed at %d chunks\n", last.Next)
	case last.Closed:
		fmt.Fprintln(in.out, "stream closed")
	default:
		fmt.Fprintf(in.out, "next chunks: --from %d\n", last.Next)
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func table(w io.Writer, header string, rows func(add func(cols ...string))) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	rows(func(cols ...string) { fmt.Fprintln(tw, strings.Join(cols, "\t")) })
	tw.Flush()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func span(start, end *time.Time, now time.Time) string {
	if start == nil {
		return "-"
	}
	e := now
	suffix := "+" // still going
	if end != nil {
		e, suffix = *end, ""
	}
	return e.Sub(*start).Round(time.Millisecond).String() + suffix
}

func errText(e *worlds.ErrorInfo) string {
	if e == nil {
		return ""
	}
	return clip(cli.OneLine(e), 60)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// printable shows JSON and text as is and other bytes quoted.
func printable(b []byte) string {
	s := string(b)
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0xFFFD }) {
		return fmt.Sprintf("%q", b)
	}
	return s
}

func printRuns(w io.Writer, runs []worlds.Run) {
	now := time.Now()
	table(w, "RUN ID\tWORKFLOW\tSTATUS\tCREATED\tDURATION\tERROR", func(add func(...string)) {
		for _, r := range runs {
			status, e := string(r.Status), r.Error
			if r.Blocked != nil {
				status, e = status+" (blocked)", &r.Blocked.Error
			}
			add(r.RunID, r.WorkflowName, status, stamp(r.CreatedAt), span(r.StartedAt, r.CompletedAt, now), errText(e))
		}
	})
}

func printRun(w io.Writer, r worlds.Run) {
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	line("Run", r.RunID)
	line("Workflow", r.WorkflowName)
	line("Status", string(r.Status))
	line("Created", stamp(r.CreatedAt))
	if r.StartedAt != nil {
		line("Started", stamp(*r.StartedAt))
	}
	if r.CompletedAt != nil {
		line("Finished", stamp(*r.CompletedAt))
	}
	line("Duration", span(r.StartedAt, r.CompletedAt, now))
	line("Events", fmt.Sprint(r.EventCount))
	line("Input", string(r.Input))
	line("Output", string(r.Output))
	if r.Error != nil {
		line("Error", cli.OneLine(r.Error))
	}
	if b := r.Blocked; b != nil {
		// The run goes on once code that gets past this error is deployed.
		line("Blocked", fmt.Sprintf("since %s (last %s): workflow code failed, redelivered with backoff", stamp(b.Since), stamp(b.At)))
		line("Blocked on", cli.OneLine(&b.Error))
	}
	for k, v := range sortedAttrs(r.Attributes) {
		line("Attribute "+k, v)
	}
	tw.Flush()
	if b := r.Blocked; b != nil && b.Error.Stack != "" {
		fmt.Fprintf(w, "Blocked stack:\n%s\n", indent(b.Error.Stack))
	}
}

// indent prefixes each line of s with two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

func printSteps(w io.Writer, steps []worlds.Step) {
	now := time.Now()
	table(w, "STEP ID\tNAME\tSTATUS\tATTEMPT\tDURATION\tERROR", func(add func(...string)) {
		for _, s := range steps {
			add(s.StepID, s.StepName, string(s.Status), fmt.Sprint(s.Attempt), span(s.StartedAt, s.CompletedAt, now), errText(s.Error))
		}
	})
}

func printEvents(w io.Writer, events []worlds.Event) {
	table(w, "SEQ\tTIME\tTYPE\tCORRELATION\tDETAIL", func(add func(...string)) {
		for _, e := range events {
			add(fmt.Sprint(e.Seq), stamp(e.CreatedAt), string(e.Type), orDash(e.CorrelationID), eventDetail(e))
		}
	})
}

func eventDetail(e worlds.Event) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	add("workflow", e.WorkflowName)
	add("step", e.StepName)
	if e.Attempt > 0 {
		add("attempt", fmt.Sprint(e.Attempt))
	}
	add("token", e.Token)
	add("input", string(e.Input))
	add("output", string(e.Output))
	add("payload", string(e.Payload))
	if e.Error != nil {
		add("error", cli.OneLine(e.Error))
	}
	if e.RetryAt != nil {
		add("retryAt", stamp(*e.RetryAt))
	}
	if e.ResumeAt != nil {
		add("resumeAt", stamp(*e.ResumeAt))
	}
	add("reason", e.Reason)
	return clip(strings.Join(parts, " "), 100)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func printHooks(w io.Writer, hooks []worlds.Hook) {
	table(w, "HOOK ID\tRUN ID\tTOKEN\tSTATUS\tRECEIVED\tCREATED\tMETADATA", func(add func(...string)) {
		for _, h := range hooks {
			add(h.HookID, h.RunID, h.Token, string(h.Status), fmt.Sprint(h.Received), stamp(h.CreatedAt), clip(string(h.Metadata), 60))
		}
	})
}

func printStreams(w io.Writer, infos []worlds.StreamInfo) {
	if len(infos) == 0 {
		fmt.Fprintln(w, "no streams")
		return
	}
	table(w, "NAME\tCHUNKS\tCLOSED\tUPDATED", func(add func(...string)) {
		for _, s := range infos {
			add(s.Name, fmt.Sprint(s.Chunks), fmt.Sprint(s.Closed), stamp(s.UpdatedAt))
		}
	})
}

// printLinks prints the runs run is linked to: its parent and children
// (workflow.StartChild) and the runs before and after it in a continue-as-new
// chain (workflow.ContinueAsNew).
func printLinks(ctx context.Context, w io.Writer, world worlds.World, run worlds.Run) error {
	var steps []worlds.Step
	for f := (worlds.ListFilter{Limit: worlds.MaxPageSize}); ; {
		p, err := world.ListSteps(ctx, run.RunID, f)
		if err != nil {
			return err
		}
		steps = append(steps, p.Items...)
		if f.Cursor = p.Cursor; f.Cursor == "" {
			break
		}
	}
	l := workflow.Links(run, steps)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	line("Parent", l.Parent)
	line("Continued from", l.ContinuedFrom)
	line("Continued as", l.ContinuedAs)
	for _, c := range l.Children {
		line("Child", fmt.Sprintf("%s (%s, %s, %s)", c.RunID, c.Workflow, c.StepID, c.Status))
	}
	return tw.Flush()
}
