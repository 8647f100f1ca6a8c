package workflowui_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cairn-go/cairn/worlds"
)

// chromium returns the browser to drive: CHROMIUM_PATH, else the test skips
// (fails on CI, where the test script installs Chromium).
func chromium(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CHROMIUM_PATH")
	if p == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CHROMIUM_PATH is unset on CI")
		}
		t.Skip("CHROMIUM_PATH is unset; set it to a Chromium binary to run the UI tests")
	}
	return p
}

// artifactsDir returns .artifacts/ui/workflowui at the module root, creating it.
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
	out := filepath.Join(dir, ".artifacts", "ui", "workflowui")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUIInChromium drives the handler as a user mounts it, under a prefix of
// their own mux, over a World whose worker runs beside it: start a run from the
// page, resume its hook with the page's button, see it complete, re-run it and
// cancel the re-run.
func TestUIInChromium(t *testing.T) {
	exec := chromium(t)
	shots := artifactsDir(t)
	e := newRemoteEnv(t)
	base := e.srv.URL + "/ops/"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

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
	// stop the browser with it (see chromedp.Run).
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start Chromium %s: %v", exec, err)
	}
	step("open the run list under the prefix",
		chromedp.Navigate(base),
		chromedp.WaitVisible(css(`#start`)),
		chromedp.WaitVisible(css(`#runs p, #runs table`)),
		shot("01-run-list-empty.png"),
	)
	step("start a run of a workflow this process does not run, by name",
		chromedp.SetValue(css(`#wf`), "devui.Approval"),
		chromedp.SetValue(css(`#input`), `"dee"`),
		chromedp.Click(css(`#start`)),
		chromedp.WaitVisible(css(`#run-status .badge`)),
	)
	if loc := read("read the location", chromedp.Location()); !strings.HasPrefix(loc, base+"#/runs/") {
		t.Fatalf("start opened %s, want a run page under %s", loc, base)
	}
	hook := `.hook` // one per run page; its token is hidden, so the page names it by hook ID
	step("see the step complete and the hook wait",
		chromedp.WaitVisible(css(`.step[data-status="completed"]`)),
		chromedp.WaitVisible(css(hook+` button.resume`)),
		chromedp.WaitVisible(css(`.stream[data-stream="log"] pre`)),
		shot("02-run-waiting-for-hook.png"),
	)
	step("query the run from the page: this UI has no workflow code, and says so",
		chromedp.SetValue(css(`#query-name`), "state"),
		chromedp.Click(css(`#query-send`)),
		chromedp.WaitVisible(css(`#query-result.err`)),
	)
	if got := read("read the query answer", chromedp.TextContent(css(`#query-result`))); !strings.Contains(got, "Options.Runners") {
		t.Fatalf("query panel without the code shows %q", got)
	}
	step("resume the hook with the page's button and see the run complete",
		chromedp.SetValue(css(hook+` textarea`), `{"by":"the page"}`),
		chromedp.Click(css(hook+` button.resume`)),
		chromedp.WaitVisible(css(`#run-status [data-status="completed"]`)),
		chromedp.WaitVisible(css(`#run-output`)),
		shot("03-run-completed.png"),
	)
	if out := read("read the run output", chromedp.TextContent(css(`#run-output`))); !strings.Contains(out, "approved by the page") {
		t.Fatalf("run output on the page: %q", out)
	}
	step("re-run it, then cancel the re-run while it waits",
		chromedp.Click(css(`#rerun`)),
		chromedp.WaitVisible(css(`#run-status [data-status="running"]`)),
		chromedp.WaitVisible(css(hook+` button.resume`)),
		chromedp.Click(css(`#cancel`)),
		chromedp.WaitVisible(css(`#run-status [data-status="cancelled"]`)),
		shot("04-rerun-cancelled.png"),
		chromedp.Navigate(base+"#/"),
		chromedp.WaitVisible(css(`#runs tr.row .badge[data-status="cancelled"]`)),
		chromedp.WaitVisible(css(`#runs tr.row .badge[data-status="completed"]`)),
	)

	for id, tier := range map[string]string{"attr-gold": "gold", "attr-silver": "silver"} {
		if _, err := e.world.Append(ctx, id, worlds.Event{Type: worlds.EventRunCreated, WorkflowName: "reports.Build", Attributes: map[string]string{"tier": tier, "team": "a"}}); err != nil {
			t.Fatal(err)
		}
	}
	step("filter the run list by attributes",
		chromedp.Navigate(base+"#/"),
		chromedp.WaitVisible(css(`#runs tr.row[data-run="attr-silver"]`)),
		chromedp.SendKeys(css(`#attrs`), "team=a, tier=gold\r"),
		chromedp.WaitNotPresent(css(`#runs tr.row[data-run="attr-silver"]`)),
		chromedp.WaitVisible(css(`#runs tr.row[data-run="attr-gold"]`)),
		shot("05-runs-by-attribute.png"),
	)
	if got := read("read the filtered rows", chromedp.TextContent(css(`#runs tbody`))); !strings.Contains(got, "tier=gold") || strings.Contains(got, "devui.Approval") {
		t.Fatalf("rows filtered by team=a, tier=gold: %q", got)
	}
}
