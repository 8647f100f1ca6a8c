package main

import (
	"context"
	"testing"

	"github.com/cairn-go/cairn/messaging/messagingtest"
)

// Against the in-memory SNS fanning out to SQS, every message arrives, and
// the three orders of one tenant and order share one FIFO group.
func TestRun(t *testing.T) {
	fake := messagingtest.NewSQS()
	std, _ := fake.AddQueue("events")
	fifo, _ := fake.AddQueue("orders.fifo")
	s := messagingtest.NewSNS(fake)
	const stdARN, fifoARN = "arn:aws:sns:us-east-1:000000000000:example-events", "arn:aws:sns:us-east-1:000000000000:example-orders.fifo"
	s.Subscribe(stdARN, std)
	s.Subscribe(fifoARN, fifo)
	if err := run(context.Background(), s, stdARN, fifoARN); err != nil {
		t.Fatal(err)
	}
	if fake.Len(std) != 3 || fake.Len(fifo) != 3 {
		t.Fatalf("standard %d, fifo %d", fake.Len(std), fake.Len(fifo))
	}
}
