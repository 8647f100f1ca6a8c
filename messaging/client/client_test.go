package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/cairn-go/cairn/internal/testenv"
	"github.com/cairn-go/cairn/messaging/client"
	"github.com/cairn-go/cairn/messaging/consumer"
	merrors "github.com/cairn-go/cairn/messaging/errors"
	"github.com/cairn-go/cairn/messaging/producer"
)

// closedEndpoint is a loopback URL nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func configFor(t *testing.T, endpoint string) aws.Config {
	cfg := testenv.AWSConfig(t)
	cfg.BaseEndpoint = aws.String(endpoint)
	return cfg
}

// TestAgainstFauxqs: NewSQS and NewSNS check an emulator that answers and
// hand back clients the consumer and producer use; against a closed port the
// check fails with ErrPingFailed after its retries, and without the check the
// constructors make no call at all.
func TestAgainstFauxqs(t *testing.T) {
	t.Parallel()
	testenv.SQS(t) // skips (or fails on CI) without the emulator
	ctx := context.Background()
	sqsc, err := client.NewSQS(ctx, configFor(t, os.Getenv(testenv.EnvSQS)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sqsc.(consumer.BatchDeleteClient); !ok {
		t.Errorf("NewSQS returned %T, without batched deletes", sqsc)
	}
	url, _ := testenv.CreateQueue(t, testenv.SQS(t), testenv.UniqueName(t, "client"), false)
	if _, err := sqsc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("hi")}); err != nil {
		t.Fatal(err)
	}
	snsc, err := client.NewSNS(ctx, configFor(t, os.Getenv(testenv.EnvSNS)))
	if err != nil {
		t.Fatal(err)
	}
	topic := testenv.CreateTopic(t, testenv.SNS(t), testenv.UniqueName(t, "client"), false)
	p, err := producer.New(snsc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Publish(ctx, &producer.PublishInput{TopicARN: topic, Message: "hi"}); err != nil {
		t.Fatal(err)
	}

	dead := configFor(t, closedEndpoint(t))
	for name, build := range map[string]func(...client.Option) (any, error){
		"sqs":       func(o ...client.Option) (any, error) { return client.NewSQS(ctx, dead, o...) },
		"sns":       func(o ...client.Option) (any, error) { return client.NewSNS(ctx, dead, o...) },
		"scheduler": func(o ...client.Option) (any, error) { return client.NewScheduler(ctx, dead, o...) },
	} {
		t.Run(name, func(t *testing.T) {
			c, err := build(client.WithPingRetryLimit(1), client.WithPingTimeout(2*time.Second))
			if !errors.Is(err, merrors.ErrPingFailed) || c != nil {
				t.Fatalf("closed port: %v, %v; want nil, ErrPingFailed", c, err)
			}
			var op interface{ Unwrap() error }
			if !errors.As(err, &op) {
				t.Errorf("%v does not wrap the cause", err)
			}
			if c, err := build(client.WithoutConnectivityCheck()); err != nil || c == nil {
				t.Fatalf("without the check: %v, %v", c, err)
			}
		})
	}
}

// TestSchedulerPing: NewScheduler lists at most one schedule, once per
// attempt (the SDK's own retries are off), and retries up to the limit.
func TestSchedulerPing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		failFirst int64
		limit     uint
		wantCalls int64
		wantErr   bool
	}{
		{"answers", 0, 2, 1, false},
		{"recovers", 2, 2, 3, false},
		{"fails", 5, 2, 3, true},
		{"no retries", 1, 0, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := calls.Add(1)
				if r.URL.Path != "/schedules" || r.URL.Query().Get("MaxResults") != "1" {
					t.Errorf("request %s %s", r.Method, r.URL)
				}
				if n <= tc.failFirst {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusInternalServerError)
					w.Write([]byte(`{"Message":"boom"}`))
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"Schedules":[]}`))
			}))
			defer srv.Close()
			c, err := client.NewScheduler(context.Background(), configFor(t, srv.URL), client.WithPingRetryLimit(tc.limit))
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("%d calls, want %d", got, tc.wantCalls)
			}
			if tc.wantErr != (err != nil) || tc.wantErr && !errors.Is(err, merrors.ErrPingFailed) || !tc.wantErr && c == nil {
				t.Fatalf("%v, %v", c, err)
			}
		})
	}
}

// TestOptions: a bad option fails the construction with ErrInvalidOption
// before any call; nil options are skipped.
func TestOptions(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Write([]byte(`{"Schedules":[]}`))
	}))
	defer srv.Close()
	cfg := configFor(t, srv.URL)
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := client.NewScheduler(context.Background(), cfg, client.WithPingTimeout(d)); !errors.Is(err, merrors.ErrInvalidOption) {
			t.Errorf("WithPingTimeout(%s): %v, want ErrInvalidOption", d, err)
		}
	}
	if calls.Load() != 0 {
		t.Errorf("%d calls before the options were valid", calls.Load())
	}
	if _, err := client.NewScheduler(context.Background(), cfg, nil, client.WithPingTimeout(time.Second)); err != nil {
		t.Errorf("nil option: %v", err)
	}
}

// TestCancelledContext: a context already cancelled makes no attempt.
func TestCancelledContext(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := client.NewScheduler(ctx, configFor(t, srv.URL))
	if !errors.Is(err, merrors.ErrPingFailed) || !errors.Is(err, context.Canceled) || calls.Load() != 0 {
		t.Fatalf("%v after %d calls; want ErrPingFailed and context.Canceled after none", err, calls.Load())
	}
}
