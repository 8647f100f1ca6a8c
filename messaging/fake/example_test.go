package fake_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cairn-go/cairn/messaging/fake"
	"github.com/cairn-go/cairn/messaging/middleware"
)

// A handler test with a programmed message and a capturing logger.
func Example() {
	logs := fake.NewLogHandler()
	log := slog.New(logs)
	handler := func(_ context.Context, m middleware.Message) error {
		var order struct{ ID string }
		if err := m.Decode(&order); err != nil {
			return err
		}
		log.Info("order received", "id", order.ID, "tenant", m.Attribute("tenant"))
		return nil
	}

	msg := &fake.Message{BodyData: []byte(`{"ID":"o-1"}`), AttributeValues: map[string]string{"tenant": "acme"}}
	if err := handler(context.Background(), msg); err != nil {
		fmt.Println(err)
	}
	for _, r := range logs.Records() {
		fmt.Println(r.Message, r.Attrs["id"], r.Attrs["tenant"])
	}
	// Output: order received o-1 acme
}
