package durabletest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the server when the test binary exits,
// however it exits.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
