package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/cairn-go/cairn/internal/cli"
	"github.com/cairn-go/cairn/internal/httpguard"
	"github.com/cairn-go/cairn/workflow/workflowui"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

const uiUsage = `usage: cairn ui (--db PATH | --aws [--table T] [--queue-url U] [--region R]) [--addr 127.0.0.1:8080] [server flags]
  Serves the web UI over an existing World whose workers run elsewhere (your
  application, the AWS World's Lambda worker): read runs, cancel them, resume
  hooks, start and re-run runs, which are queued for those workers. The World's
  RPC and webhook endpoints are served too, under /v1/workflow.
  World:   --db PATH (default $CAIRN_DB) | --aws with --table (default
           $WORKFLOW_TABLE) and --queue-url (default $WORKFLOW_QUEUE_URL);
           DYNAMODB_ENDPOINT and SQS_ENDPOINT point at emulators.
  --addr   address to listen on (default 127.0.0.1:8080). The UI has no
           authentication: keep it on a loopback address.
Server flags:
` + serveFlagsUsage

func uiCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return uiWith(ctx, args, stdout, stderr, os.Getenv)
}

func uiWith(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("cairn ui", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var wf worldFlags
	wf.register(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	var sf serveFlags
	sf.register(fs)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintln(stderr, "cairn ui:", cli.OneLine(err))
		fmt.Fprintln(stderr, "run 'cairn ui -h' for usage")
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cairn ui: unexpected argument %q\nrun 'cairn ui -h' for usage\n", fs.Arg(0))
		return exitUsage
	}
	if !wf.aws && wf.table == "" && wf.db == "" && getenv("CAIRN_DB") == "" {
		fmt.Fprintln(stderr, "cairn ui: no World given: pass --db PATH (or set CAIRN_DB), or --aws")
		return exitUsage
	}
	prog := cli.NewProgress(stderr)
	prog.Update("opening the World…")
	w, closeWorld, err := wf.open(ctx, getenv)
	prog.Done()
	if err != nil {
		fmt.Fprintln(stderr, "cairn ui:", cli.OneLine(err))
		return exitError
	}
	defer closeWorld()
	ui, err := workflowui.Handler(w, workflowui.Options{RPC: true, TrustedOrigins: sf.origins, ShowTokens: sf.showTokens})
	if err != nil {
		fmt.Fprintln(stderr, "cairn ui:", cli.OneLine(err))
		return exitError
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "cairn ui: --addr %s: %s\n", *addr, cli.OneLine(err))
		return exitError
	}
	// Requests (server-sent event streams included) end when the server stops.
	reqCtx, stopReqs := context.WithCancel(context.WithoutCancel(ctx))
	defer stopReqs()
	srv, err := newServer(ui, sf, httpguard.Timeouts{}, reqCtx)
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "cairn ui:", cli.OneLine(err))
		return exitError
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "cairn ui: web UI on %s/ (RPC and webhooks under %s%s)\n", url, url, worldhttp.DefaultPrefix)
	select {
	case <-ctx.Done():
	case err := <-served:
		fmt.Fprintln(stderr, "cairn ui:", cli.OneLine(err))
		return exitError
	}
	stopReqs()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		fmt.Fprintln(stderr, "cairn ui:", cli.OneLine(err))
		return exitError
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, "cairn ui:", cli.OneLine(err))
		return exitError
	}
	return exitOK
}
