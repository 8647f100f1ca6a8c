package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairn-go/cairn/internal/cli"
)

// artifactsDir returns .artifacts/ui at the module root, creating it.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
	out := filepath.Join(dir, ".artifacts", "ui")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// chromium returns the browser to drive: CHROMIUM_PATH, else the test skips
// (fails on CI, where the test script installs Chromium).
func chromium(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CHROMIUM_PATH")
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CHROMIUM_PATH is unset on CI")
		}
		t.Skip("CHROMIUM_PATH is unset; set it to a Chromium binary (e.g. /usr/bin/chromium) to run the UI tests")
	}
	return p
}

// TestDevUIInChromium drives the dev server's web UI in headless Chromium: start
// the demo order from the page, watch it progress, resume its hook with the
// page's button, and see it complete, saving screenshots on the way.
func TestDevUIInChromium(t *testing.T) {
	exec := chromium(t)
	shots := artifactsDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	d, err := startDev(ctx, devOptions{addr: "127.0.0.1:0", db: filepath.Join(t.TempDir(), "dev.db"), packing: 300 * time.Millisecond}, cli.ForceProgress(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("close dev server: %v", err)
		}
	}()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exec),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	defer cancelBrowser()

	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), buf, 0o644)
		})
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			_ = chromedp.Do(browser, shot("failure.png"))
			t.Fatalf("%s: %v", what, err)
		}
	}
	read := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		v, err := chromedp.Run(browser, a)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	// The first Run starts the browser; it must not carry a timeout, which would
	// stop the browser with it (see chromedp.Run). Each later step has its own.
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start Chromium %s: %v", exec, err)
	}
	step("open the run list",
		chromedp.Navigate(d.url+"/"),
		chromedp.WaitVisible(css(`#start`)),
		chromedp.WaitVisible(css(`#runs p, #runs table`)),
		shot("01-run-list-empty.png"),
	)
	if input := read("read the start form", chromedp.Value(css(`#input`))); !strings.Contains(input, "ord-1001") {
		t.Fatalf("start form not prefilled with the demo order: %q", input)
	}

	step("start the demo order from the page",
		chromedp.Click(css(`#start`)),
		chromedp.WaitVisible(css(`#run-status .badge`)),
	)
	if loc := read("read the location", chromedp.Location()); !strings.Contains(loc, "#/runs/") {
		t.Fatalf("start did not open the run page: %s", loc)
	}

	hook := `.hook` // the run's one hook, named by its ID: cairn dev hides tokens by default
	step("see steps progress until the warehouse hook waits",
		chromedp.WaitVisible(css(`.step[data-status="completed"]`)),
		chromedp.WaitVisible(css(hook+` button.resume`)),
		chromedp.WaitVisible(css(`#run-status [data-status="running"]`)),
		chromedp.WaitVisible(css(`.stream[data-stream="progress"] pre`)),
		shot("02-run-waiting-for-hook.png"),
	)
	if text := read("read the hook", chromedp.TextContent(css(hook))); strings.Contains(text, "warehouse-") || !strings.Contains(text, "token hidden") {
		t.Fatalf("the hook card shows %q: want its token hidden by default", text)
	}
	if text := read("read the retried attempt", chromedp.TextContent(css(`.step .attempt-error`))); !strings.Contains(text, "attempt 1 failed, retried") || !strings.Contains(text, "card processor timed out") {
		t.Fatalf("timeline shows the retried attempt as %q", text)
	}
	if text := read("read the durable timer", chromedp.TextContent(css(`.step.wait`))); !strings.Contains(text, "sleep") {
		t.Fatalf("timeline shows the sleep as %q", text)
	}
	if text := read("read the live stream", chromedp.TextContent(css(`.stream[data-stream="progress"] pre`))); !strings.Contains(text, "reserved 3 items") {
		t.Fatalf("live stream shows %q", text)
	}

	step("ask the waiting run its stage with the Query panel",
		chromedp.SetValue(css(`#query-name`), "stage"),
		chromedp.Click(css(`#query-send`)),
		chromedp.WaitVisible(css(`#query-result:not([hidden])`)),
		shot("02b-run-queried.png"),
	)
	if text := read("read the query answer", chromedp.TextContent(css(`#query-result`))); !strings.Contains(text, "waiting for the warehouse to confirm") {
		t.Fatalf("the stage query answered %q", text)
	}

	step("resume the hook with the page's button and see the run complete",
		chromedp.SetValue(css(hook+` textarea`), `{"packer":"Dana","boxes":2}`),
		chromedp.Click(css(hook+` button.resume`)),
		chromedp.WaitVisible(css(`#run-status [data-status="completed"]`)),
		chromedp.WaitVisible(css(`#run-output`)),
		func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.Poll[bool](`document.querySelector('.stream[data-stream="progress"] pre').textContent.includes("shipped")`,
				chromedp.WithPollingTimeout(20*time.Second))(ctx, t)
			return chromedp.Void{}, err
		},
		shot("03-run-completed.png"),
	)
	if out := read("read the run output", chromedp.TextContent(css(`#run-output`))); !strings.Contains(out, `"confirmedBy": "Dana"`) {
		t.Fatalf("run output on the page: %q", out)
	}
	if text := read("read the stream", chromedp.TextContent(css(`.stream[data-stream="progress"] pre`))); !strings.Contains(text, "packed by Dana") {
		t.Fatalf("stream after resume: %q", text)
	}

	step("see the run completed in the list",
		chromedp.Navigate(d.url+"/#/"),
		chromedp.WaitVisible(css(`#runs tr.row .badge[data-status="completed"]`)),
		shot("04-run-list-completed.png"),
	)
	rows, err := chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll("#runs tr.row").length`))
	if err != nil || rows != 1 {
		t.Fatalf("run list shows %d runs (%v), want 1", rows, err)
	}

	step("re-run the order from its page, then cancel the new run while it waits",
		chromedp.Click(css(`#runs tr.row a`)),
		chromedp.WaitVisible(css(`#run-status [data-status="completed"]`)),
		chromedp.Click(css(`#rerun`)),
		chromedp.WaitVisible(css(`#run-status [data-status="running"]`)),
		chromedp.WaitVisible(css(hook+` button.resume`)),
		chromedp.Click(css(`#cancel`)),
		chromedp.WaitVisible(css(`#run-status [data-status="cancelled"]`)),
		shot("05-rerun-cancelled.png"),
		chromedp.Navigate(d.url+"/#/"),
		chromedp.WaitVisible(css(`#runs tr.row .badge[data-status="cancelled"]`)),
	)
	rows, err = chromedp.Run(browser, chromedp.Evaluate[int](`document.querySelectorAll("#runs tr.row").length`))
	if err != nil || rows != 2 {
		t.Fatalf("run list shows %d runs (%v) after the re-run, want 2", rows, err)
	}
}
