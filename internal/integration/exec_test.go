package integration

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// daemon is exec.Command for a server a test starts and stops itself
// (lockstep, mariadbd, the exporter, the witness). It is killed if the test
// binary dies first (go test's timeout, a Ctrl-C, kill -9), so that no
// server outlives the tests and goes on burning the machine's CPU.
//
// Linux sends the signal when the thread that started the process exits;
// Go's runtime keeps its threads for the life of the process unless a
// goroutine exits while locked to one, which these tests never do.
func daemon(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// tool is exec.Command for a client program a test runs to completion
// (sysbench, the mariadb CLI, mariadb-install-db, python): it is killed
// after timeout, and its output pipes are closed WaitDelay after it exits
// even if a child of it still holds them. A hung tool then fails its test
// with a message, instead of the whole package running into go test's
// timeout with nothing but a goroutine dump to show for it. Like a
// daemon, it dies with the test binary.
func tool(t testing.TB, timeout time.Duration, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error {
		t.Logf("%s %v did not finish within %v: killing it", name, args, timeout)
		return cmd.Process.Kill()
	}
	cmd.WaitDelay = 10 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}
