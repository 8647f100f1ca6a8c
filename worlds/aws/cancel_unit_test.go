package awsworld

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairn-go/cairn/worlds"
)

// IDs Queue would refuse are refused before any call to DynamoDB (the fake has no
// GetItem: calling it would panic).
func TestCancelDeliveryValidatesID(t *testing.T) {
	t.Parallel()
	w, err := New(Config{TableName: "wf", QueueURL: "https://sqs.us-east-1.amazonaws.com/1/wf"}, &fakeDB{}, &fakeSQS{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", strings.Repeat("x", maxIDLength+1)} {
		err := w.CancelDelivery(context.Background(), id)
		var ae *worlds.ArgumentError
		if !errors.As(err, &ae) || ae.Field != "id" || !errors.Is(err, worlds.ErrInvalidArgument) {
			t.Errorf("CancelDelivery(%d bytes) = %v, want an *ArgumentError for id", len(id), err)
		}
	}
}
