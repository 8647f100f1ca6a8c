package idgen_test

import (
	"context"
	"fmt"

	"github.com/cairn-go/cairn/messaging/idgen"
)

func Example() {
	g := idgen.NewComposite(idgen.WithFields("tenant", "order"))
	id, _ := g.Generate(context.Background(), map[string]string{"order": "o-1", "tenant": "acme", "other": "x"})
	fmt.Println(id)
	// Output: acme:o-1
}
