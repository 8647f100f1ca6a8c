package awsworld_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds"
	awsworld "github.com/cairn-go/cairn/worlds/aws"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Guarded waits on a hook, with a generated token or the input's, and passes
// the payload to a step whose first call fails the run, so failure paths log too.
type Guarded struct{ failed *sync.Once }

func (g Guarded) Run(ctx workflow.Context, token string) (string, error) {
	h, err := workflow.CreateHook[string](ctx, workflow.HookOptions{Token: token})
	if err != nil {
		return "", err
	}
	v, err := h.Receive(ctx)
	if err != nil {
		return "", err
	}
	return workflow.Step(ctx, "use", func(_ context.Context, s string) (string, error) {
		var fail bool
		g.failed.Do(func() { fail = true })
		if fail {
			return "", workflow.Fatal(errFailedOnce)
		}
		return "ok", nil
	}, v, workflow.WithRetry(workflow.RetryPolicy{MaxAttempts: 2, InitialInterval: 10 * time.Millisecond}))
}

var errFailedOnce = errors.New("failed once")

// The AWS World's handlers and the runtime on it log no hook token, payload,
// workflow input or message body at Info level or above; generated tokens carry
// at least 128 random bits and never repeat.
func TestAWSSecrecy(t *testing.T) {
	t.Parallel()
	var buf lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := newEnv(t, func(_ *env, c *awsworld.Config) { c.Logger = logger })
	client, err := workflow.NewClient(workflow.Config{World: e.w, Logger: logger, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	wf := Guarded{failed: &sync.Once{}}
	go func() { defer close(done); _ = client.Serve(ctx, workflow.Use(wf)) }()
	t.Cleanup(func() { cancel(); <-done })

	const token, payload, body = "tok-2b7e151628aed2a6abf7158809cf4f3c", "payload-3243f6a8885a308d", "body-a4093822299f31d0"
	secret, err := workflow.Start(context.Background(), client, wf, token)
	if err != nil {
		t.Fatal(err)
	}
	// A foreign message carrying a secret body.
	if _, err := e.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(e.url), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(awsworld.HTTP(e.w))
	t.Cleanup(srv.Close)
	post := func(tok string) int {
		resp, err := http.Post(srv.URL+"/v1/workflow/webhooks/"+tok, "text/plain", strings.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	_ = post(token + "x") // a wrong token, so the failure path logs
	waitFor(t, "the hook", func() bool { return post(token) == http.StatusAccepted })
	rctx, rcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer rcancel()
	if _, err := secret.Result(rctx); err == nil {
		t.Fatal("the step's fatal failure did not fail the run")
	}

	// Generated tokens.
	const n = 12
	for i := range n {
		if _, err := workflow.Start(context.Background(), client, wf, ""); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	seen := map[string]bool{}
	waitFor(t, "the generated hooks", func() bool {
		page, err := e.w.ListHooks(context.Background(), worlds.HookFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range page.Items {
			if h.Token != token {
				seen[h.Token] = true
			}
		}
		return len(seen) >= n
	})
	if len(seen) != n {
		t.Fatalf("%d distinct generated tokens for %d hooks", len(seen), n)
	}
	for tok := range seen {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || len(raw)*8 < 128 {
			t.Fatalf("token %q: %d bits, %v; want >= 128 URL-safe bits", tok, len(raw)*8, err)
		}
	}

	logs := buf.String()
	if !strings.Contains(logs, `"level":"WARN"`) {
		t.Fatalf("no warnings logged: the failure paths did not run, so the check proves nothing:\n%s", logs)
	}
	for _, line := range strings.Split(logs, "\n") {
		if line == "" || strings.Contains(line, `"level":"DEBUG"`) {
			continue
		}
		for _, s := range []string{token, payload, body} {
			if strings.Contains(line, s) {
				t.Errorf("%q logged above Debug: %s", s, line)
			}
		}
	}
}
