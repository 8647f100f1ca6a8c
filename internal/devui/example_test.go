package devui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"

	"github.com/cairn-go/cairn/internal/devui"
	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/worlds/local"
)

// The dev UI is an http.Handler over a World and a workflow client; `cairn dev`
// serves it next to the World's workers.
func Example() {
	ctx := context.Background()
	world, err := local.Open(ctx, local.Config{Path: local.Memory})
	if err != nil {
		panic(err)
	}
	defer world.Close()
	client, err := workflow.NewClient(workflow.Config{World: world})
	if err != nil {
		panic(err)
	}
	ui, err := devui.New(devui.Config{
		World:     world,
		Client:    client,
		Workflows: map[string]json.RawMessage{"devui.Approval": json.RawMessage(`"ada"`)},
	})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(ui)
	defer srv.Close()

	res, err := srv.Client().Get(srv.URL + "/api/workflows")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(string(body))
	// Output: {"workflows":[{"name":"devui.Approval","example":"ada"}]}
}
