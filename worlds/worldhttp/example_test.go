package worldhttp_test

import (
	"log"
	"net/http"

	"github.com/cairn-go/cairn/worlds"
	"github.com/cairn-go/cairn/worlds/worldhttp"
)

// Serve the RPC endpoint on an internal listener and only the webhooks publicly.
func Example() {
	var world worlds.World // worlds/local.Open(...) or worlds/aws.New(...)
	go func() {
		log.Fatal(http.ListenAndServe("127.0.0.1:8081", worldhttp.RPC(world, worldhttp.Options{})))
	}()
	log.Fatal(http.ListenAndServe(":8080", worldhttp.Webhook(world, worldhttp.Options{Prefix: "/v1/workflow"})))
}
