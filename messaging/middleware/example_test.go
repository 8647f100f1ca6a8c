package middleware_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairn-go/cairn/messaging/logger"
	"github.com/cairn-go/cairn/messaging/messagingtest"
	"github.com/cairn-go/cairn/messaging/middleware"
)

func Example() {
	log := logger.NewNoOp()
	reg := prometheus.NewRegistry()
	chain := middleware.Chain(
		middleware.Recovery(log), // outermost
		middleware.Logging(log),
		middleware.Metrics("orders", middleware.WithMetricsRegisterer(reg)),
		middleware.OTel("orders"),
	)
	h := chain(func(ctx context.Context, msg middleware.Message) error { panic("bug") })
	err := h(context.Background(), messagingtest.NewMessage("x", nil))
	fmt.Println(err)
	// Output: handler panicked: bug
}
