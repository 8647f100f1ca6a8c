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

// TestDevUIRunLinksInChromium opens a parent run in the dev UI, follows its
// child link, and from the child follows the continue-as-new link.
func TestDevUIRunLinksInChromium(t *testing.T) {
	exec := chromium(t)
	db, child, next := seedLinks(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d, err := startDev(ctx, devOptions{addr: "127.0.0.1:0", db: db, packing: time.Second}, cli.ForceProgress(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Errorf("close dev server: %v", err)
		}
	}()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(exec), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 1000))
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start Chromium %s: %v", exec, err)
	}
	link := func(id string) chromedp.CSS { return chromedp.CSS(`#summary a[href="#/runs/` + id + `"]`) }
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(browser, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			if buf, err := chromedp.Run(browser, chromedp.FullScreenshot(100)); err == nil {
				_ = os.WriteFile(filepath.Join(artifactsDir(t), "links-failure.png"), buf, 0o644)
			}
			t.Fatalf("%s: %v", what, err)
		}
	}
	step("open the parent and follow its child link",
		chromedp.Navigate(d.url+"/#/runs/parent"),
		chromedp.WaitVisible(link(child)),
		chromedp.Click(link(child)),
		chromedp.WaitVisible(link("parent")),
		chromedp.WaitVisible(link(next)),
		chromedp.Click(link(next)),
		chromedp.WaitVisible(link(child)),
	)
	loc, err := chromedp.Run(browser, chromedp.Location())
	if err != nil || !strings.HasSuffix(loc, "#/runs/"+next) {
		t.Fatalf("location after following the links = %q, %v", loc, err)
	}
}
