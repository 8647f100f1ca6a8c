package checkpoint_test

import (
	"errors"
	"fmt"

	"github.com/cairn-go/cairn/checkpoint"
)

func Example() {
	type Receipt struct {
		OrderID string `json:"orderId"`
		Cents   int64  `json:"cents"`
	}
	codec, err := checkpoint.New(checkpoint.Options{})
	if err != nil {
		panic(err)
	}
	b, err := codec.Marshal("shop.Receipt", Receipt{OrderID: "o-1", Cents: 1999})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))

	var r Receipt
	if err := codec.Unmarshal(b, "shop.Receipt", &r); err != nil {
		panic(err)
	}
	fmt.Println(r.OrderID, r.Cents)

	// A struct that no longer has the "cents" field is told, not silently fed.
	var renamed struct {
		OrderID string `json:"orderId"`
		Amount  int64  `json:"amount"`
	}
	err = codec.Unmarshal(b, "shop.Receipt", &renamed)
	fmt.Println(errors.Is(err, checkpoint.ErrUnknownField))
	// Output:
	// {"v":1,"type":"shop.Receipt","data":{"orderId":"o-1","cents":1999},"sum":"sha256:3fd1192aa2230b280b7e46ea30c5bd91f185f4832f93f6be0322a56cdf16156a"}
	// o-1 1999
	// true
}
