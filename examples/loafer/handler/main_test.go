package main

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-go/cairn/messaging/messagingtest"
)

// The program's consumer, run against the in-memory SQS, handles and
// deletes every message.
func TestRun(t *testing.T) {
	fake := messagingtest.NewSQS()
	url, _ := fake.AddQueue(queueName)
	for _, body := range []string{`{"id":"u-1","text":"a"}`, `{"id":"u-2","text":"b"}`} {
		if _, err := fake.Send(url, body, "", map[string]string{"source": "test"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, fake, queueName) }()
	deadline := time.Now().Add(10 * time.Second)
	for fake.Len(url) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := fake.Len(url); n != 0 {
		t.Fatalf("%d messages left", n)
	}
}
