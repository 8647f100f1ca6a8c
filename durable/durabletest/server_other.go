//go:build !linux

package durabletest

import "os/exec"

// dieWithParent is a no-op where the kernel cannot tie the server's life to
// the test binary's; set DURABLE_CHECKPOINT_ENDPOINT to a server you manage.
func dieWithParent(*exec.Cmd) {}
