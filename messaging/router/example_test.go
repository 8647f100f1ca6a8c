package router_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-go/cairn/messaging/middleware"
	"github.com/cairn-go/cairn/messaging/router"
)

func Example() {
	r, err := router.New("orders.fifo",
		func(ctx context.Context, msg middleware.Message) error { return nil },
		router.WithRunMode(router.PerGroupID),
		router.WithCustomGroupFields("tenant"),
		router.WithVisibilityTimeout(60),
		router.WithScheduledRetry(
			router.WithSchedulerIdentity("arn:aws:sqs:us-east-1:000000000000:orders.fifo",
				"arn:aws:iam::000000000000:role/scheduler"),
			router.WithScheduledDLQ("https://sqs.us-east-1.amazonaws.com/000000000000/orders-dlq.fifo"),
			router.WithMaxRetryCount(5),
			router.WithBackoff(time.Second, 15*time.Minute)),
	)
	fmt.Println(r.RunMode(), r.RetryModel(), err)

	_, err = router.New("orders", nil)
	fmt.Println(err)
	// Output:
	// PerGroupID Scheduled <nil>
	// handler is nil
}
