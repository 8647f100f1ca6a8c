package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/cairn-go/cairn/internal/cli"
	"github.com/cairn-go/cairn/internal/httpguard"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowui"
	"github.com/cairn-go/cairn/worlds/local"
)

const devUsage = `usage: cairn dev [--addr 127.0.0.1:0] [--db PATH] [--packing 5s] [server flags]
  Runs the embedded World with the demo workflows and serves the web UI, and the
  World's RPC and webhook endpoints under /v1/workflow, on one loopback port.
  --db       embedded World file (default $CAIRN_DB, else ./cairn-dev.db)
  --packing  durable timer of the demo order workflow (default 5s)
Server flags:
` + serveFlagsUsage

// devOptions configure a dev server.
type devOptions struct {
	addr    string
	db      string
	packing time.Duration // the demo order's durable timer
	serve   serveFlags
	// timeouts of the HTTP server; zero uses httpguard.DefaultTimeouts.
	timeouts httpguard.Timeouts
}

// devServer is a running `cairn dev`: the World serving deliveries and the HTTP server.
type devServer struct {
	url    string
	world  *local.World
	client *workflow.Client
	done   chan error
	stop   func()
}

// startDev opens the World, starts the workers and the HTTP server, and returns
// once the server accepts connections.
func startDev(ctx context.Context, o devOptions, prog *cli.Progress) (*devServer, error) {
	prog.Update("opening %s…", o.db)
	if dir := filepath.Dir(o.db); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--db %s: directory %s does not exist", o.db, dir)
		}
	}
	// Listen first: the World builds hooks' webhook URLs from the address.
	prog.Update("listening on %s…", o.addr)
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %s: %w", o.addr, err)
	}
	base := "http://" + ln.Addr().String()
	world, err := local.Open(ctx, local.Config{Path: o.db, BaseURL: base + "/v1/workflow"})
	if err != nil {
		ln.Close()
		if errors.Is(err, local.ErrSchemaVersion) {
			return nil, fmt.Errorf("World file %s was written by another version of cairn: %w", o.db, err)
		}
		return nil, fmt.Errorf("cannot open World file %s: %w", o.db, err)
	}
	client, err := workflow.NewClient(workflow.Config{World: world, PollInterval: 100 * time.Millisecond})
	if err != nil {
		ln.Close()
		world.Close()
		return nil, err
	}
	order := FulfilOrder{charges: &chargeCounter{}, packing: o.packing}
	example, _ := json.Marshal(Order{ID: "ord-1001", Items: []string{"tent", "stove", "lantern"}, AmountCt: 24999})
	runners := workflow.Use(order)
	ui, err := workflowui.ClientHandler(client, workflowui.Options{
		Runners:        runners,
		Workflows:      map[string]json.RawMessage{order.WorkflowName(): example},
		RPC:            true,
		TrustedOrigins: o.serve.origins,
		ShowTokens:     o.serve.showTokens,
	})
	if err != nil {
		ln.Close()
		world.Close()
		return nil, err
	}
	// Requests (server-sent event streams included) end when the server stops.
	reqCtx, stopReqs := context.WithCancel(context.WithoutCancel(ctx))
	srv, err := newServer(ui, o.serve, o.timeouts, reqCtx)
	if err != nil {
		stopReqs()
		ln.Close()
		world.Close()
		return nil, err
	}
	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 2)
	go func() { done <- client.Serve(serveCtx, runners) }()
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			done <- err
			return
		}
		done <- nil
	}()
	d := &devServer{url: base, world: world, client: client, done: make(chan error, 1)}
	d.stop = func() {
		stopReqs()
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutCtx)
		stopServe()
	}
	go func() {
		first := <-done
		d.stop()
		second := <-done
		world.Close()
		d.done <- errors.Join(first, second)
	}()
	return d, nil
}

// Close stops the server and the workers and closes the World.
func (d *devServer) Close() error {
	d.stop()
	return <-d.done
}

func dev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cairn dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := devOptions{packing: 5 * time.Second}
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "address to listen on")
	fs.StringVar(&o.db, "db", "", "embedded World file (default $CAIRN_DB, else ./cairn-dev.db)")
	fs.DurationVar(&o.packing, "packing", o.packing, "durable timer of the demo order workflow")
	o.serve.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, devUsage)
			return 0
		}
		fmt.Fprintln(stderr, "cairn dev:", cli.OneLine(err))
		fmt.Fprintln(stderr, "run 'cairn dev -h' for usage")
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "cairn dev: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if o.packing < 0 {
		fmt.Fprintf(stderr, "cairn dev: --packing %s: must not be negative\n", o.packing)
		return exitUsage
	}
	if o.db == "" {
		o.db = os.Getenv("CAIRN_DB")
	}
	if o.db == "" {
		o.db = "cairn-dev.db"
	}
	prog := cli.NewProgress(stderr)
	d, err := startDev(ctx, o, prog)
	prog.Done()
	if err != nil {
		fmt.Fprintln(stderr, "cairn dev:", cli.OneLine(err))
		return exitError
	}
	fmt.Fprintf(stdout, "cairn dev: web UI on %s/ (World %s; RPC and webhooks under %s%s)\n", d.url, o.db, d.url, "/v1/workflow")
	select {
	case <-ctx.Done():
	case err := <-d.done:
		d.done <- err
	}
	if err := d.Close(); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "cairn dev:", cli.OneLine(err))
		return exitError
	}
	return 0
}
