package conn_test

import (
	"context"
	"fmt"

	"github.com/cairn-go/cairn/messaging/conn"
)

func Example() {
	cfg, err := conn.New(context.Background(),
		conn.WithRegion("us-east-1"),
		conn.WithAccessKey("test", "test"),
		conn.WithEndpoint("http://127.0.0.1:4566"), // an emulator
	)
	fmt.Println(cfg.Region, err)
	// Output: us-east-1 <nil>
}
