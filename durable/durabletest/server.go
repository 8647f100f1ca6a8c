package durabletest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// NoServerEnv, set to any value, keeps [Run] from starting the checkpoint
// server itself when EndpointEnv is unset: the server subtests skip.
const NoServerEnv = "DURABLE_NO_SERVER"

// serverScript is testdata/checkpointserver/server.mjs of this module's source.
func serverScript() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("durabletest: cannot locate the package source")
	}
	p := filepath.Join(filepath.Dir(file), "..", "testdata", "checkpointserver", "server.mjs")
	if !fileExists(p) {
		return "", fmt.Errorf("durabletest: %s not found (a build of this module without its testdata?)", p)
	}
	return p, nil
}

// startServer starts AWS's local checkpoint server on a free loopback port
// and waits until it answers. The returned stop kills it.
func startServer() (endpoint string, stop func(), err error) {
	modules, err := NodeModules()
	if err != nil {
		return "", nil, err
	}
	node, err := Node(modules)
	if err != nil {
		return "", nil, err
	}
	script, err := serverScript()
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	logf, err := os.CreateTemp("", "durable-checkpointserver-*.log")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(node, script, modules, strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = logf, logf // files, not pipes: no copying goroutines
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return "", nil, fmt.Errorf("durabletest: start %s: %w", node, err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = logf.Close()
			_ = os.Remove(logf.Name())
		})
	}
	endpoint = "http://127.0.0.1:" + strconv.Itoa(port)
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := client.Get(endpoint + "/ping")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return endpoint, stop, nil
			}
		}
	}
	log, _ := os.ReadFile(logf.Name())
	stop()
	return "", nil, fmt.Errorf("durabletest: the checkpoint server did not answer within 30s; its log:\n%s", log)
}

// StartServer starts AWS's local checkpoint server for t (Node and the
// pinned npm packages found by [NodeModules] and [Node]), stopped when t
// ends, and returns its endpoint for [Client]. Without Node or the packages
// it skips t, saying what to install.
func StartServer(t testing.TB) string {
	t.Helper()
	endpoint, stop, err := startServer()
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(stop)
	return endpoint
}

// shared is the server Run starts once per test binary when EndpointEnv is
// unset; it dies with the test binary.
var shared struct {
	once     sync.Once
	endpoint string
	err      error
}

// Endpoint returns the checkpoint server's endpoint: EndpointEnv, else a
// server started for this test binary, else an error saying why not.
func Endpoint() (string, error) {
	if e := os.Getenv(EndpointEnv); e != "" {
		return e, nil
	}
	if os.Getenv(NoServerEnv) != "" {
		return "", fmt.Errorf("%s is unset and %s is set: AWS's local checkpoint server is not used", EndpointEnv, NoServerEnv)
	}
	shared.once.Do(func() { shared.endpoint, _, shared.err = startServer() })
	return shared.endpoint, shared.err
}
