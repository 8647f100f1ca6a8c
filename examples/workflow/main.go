// Command workflow shows cairn's workflow runtime on the embedded World: a signup
// workflow with a retried step, a durable sleep, a hook resumed through the webhook
// handler over HTTP, and a progress stream read while the run is live.
//
//	go run ./examples/workflow
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds/local"
)

// Signup onboards a user.
type Signup struct{ mailerCalls *atomic.Int32 }

type User struct {
	Email string `json:"email"`
}

func (s Signup) Run(ctx workflow.Context, u User) (string, error) {
	logger := slog.New(workflow.NewLogHandler(slog.NewTextHandler(os.Stderr, nil)))
	logger.InfoContext(ctx, "signup started", "email", u.Email) // logged once, not on every replay

	// A step is a plain function; it is retried on error (the mailer fails once).
	if _, err := workflow.Step(ctx, "send welcome mail", func(sctx context.Context, u User) (bool, error) {
		if s.mailerCalls.Add(1) == 1 {
			return false, errors.New("mailer unavailable")
		}
		return true, workflow.WriteStream(sctx, "progress", []byte("welcome mail sent to "+u.Email))
	}, u, workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 3, InitialInterval: 200 * time.Millisecond})); err != nil {
		return "", err
	}

	// A durable timer: the process could restart in between.
	if err := workflow.Sleep(ctx, time.Second); err != nil {
		return "", err
	}

	// Wait for the user to click the confirmation link (a webhook by token).
	hook, err := workflow.CreateHook[struct{ Confirmed bool }](ctx, workflow.HookOptions{Token: "confirm-" + u.Email})
	if err != nil {
		return "", err
	}
	if _, err := workflow.Step(ctx, "send confirmation link", func(sctx context.Context, token string) (bool, error) {
		return true, workflow.WriteStream(sctx, "progress", []byte("confirmation link: /webhooks/"+token))
	}, hook.Token); err != nil {
		return "", err
	}
	click, err := hook.Receive(ctx)
	if err != nil {
		return "", err
	}
	if !click.Confirmed {
		return "declined", nil
	}
	return "active", nil
}

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cairn-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	world, err := local.Open(ctx, local.Config{Path: filepath.Join(dir, "cairn.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer world.Close()
	client, err := workflow.NewClient(workflow.Config{World: world})
	if err != nil {
		log.Fatal(err)
	}
	wf := Signup{mailerCalls: &atomic.Int32{}}
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = client.Serve(serveCtx, workflow.Use(wf)) }()

	mux := http.NewServeMux()
	mux.Handle("POST /webhooks/{token}", client.WebhookHandler(workflow.WebhookOptions{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	run, err := workflow.Start(ctx, client, wf, User{Email: "ada@example.com"})
	if err != nil {
		log.Fatal(err)
	}
	for chunk, err := range client.ReadStream(ctx, run.ID(), "progress") {
		if err != nil {
			log.Fatal(err)
		}
		line := string(chunk.Data)
		fmt.Println("progress:", line)
		if path, ok := strings.CutPrefix(line, "confirmation link: "); ok {
			resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(`{"Confirmed":true}`))
			if err != nil {
				log.Fatal(err)
			}
			resp.Body.Close()
			fmt.Println("clicked the link:", resp.Status)
		}
	}
	status, err := run.Result(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("account:", status, "(mailer called", wf.mailerCalls.Load(), "times)")
}
