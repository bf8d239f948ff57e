package integration

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// tool is exec.Command for a client program a test runs to completion
// (sysbench, the mariadb CLI, mariadb-install-db, python): it is killed
// after timeout, and its output pipes are closed WaitDelay after it exits
// even if a child of it still holds them. A hung tool then fails its test
// with a message, instead of the whole package running into go test's
// timeout with nothing but a goroutine dump to show for it.
//
// The servers the tests start (lockstep, mariadbd, the witness, the
// exporter) are started with child.Start, so that they die with the test
// binary (go test's timeout, a Ctrl-C, kill -9) instead of running on and
// burning the machine's CPU.
func tool(t testing.TB, timeout time.Duration, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error {
		t.Logf("%s %v did not finish within %v: killing it", name, args, timeout)
		return cmd.Process.Kill()
	}
	cmd.WaitDelay = 10 * time.Second
	return cmd
}
