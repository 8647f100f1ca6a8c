package workflowui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/cairn-go/cairn/workflow"
	"github.com/cairn-go/cairn/workflow/workflowui"
	"github.com/cairn-go/cairn/worlds/local"
)

// The UI is an http.Handler over a World; mount it in your own server next to
// the workers of your workflows.
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
	ui, err := workflowui.ClientHandler(client, workflowui.Options{
		Workflows: map[string]json.RawMessage{"devui.Approval": json.RawMessage(`"ada"`)},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/workflows/", http.StripPrefix("/workflows", ui))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := srv.Client().Get(srv.URL + "/workflows/api/workflows")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(string(body))
	// Output: {"workflows":[{"name":"devui.Approval","example":"ada"}]}
}
