// Package child starts processes that die with the one that started them.
//
// Linux's parent-death signal (PR_SET_PDEATHSIG) fires when the thread
// that forked the child exits, not the process. Go moves goroutines
// between threads and ends a thread when a goroutine locked to it
// (runtime.LockOSThread) exits, as the network-namespace code does after
// a setns: a child forked on such a thread earlier, by any goroutine,
// would be killed then. Start therefore forks every child from one
// thread that is locked for the life of the process, so the signal comes
// only when the process itself is gone (exited, killed, crashed) and
// never left a server running behind it.
package child

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

type request struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	requests = make(chan request)
	spawner  sync.Once
)

// Start starts cmd as exec.Cmd.Start does, with SIGKILL as its
// parent-death signal (other SysProcAttr settings are kept).
func Start(cmd *exec.Cmd) error {
	spawner.Do(func() {
		go func() {
			// Never unlocked, and the goroutine never returns: the
			// thread lives as long as the process.
			runtime.LockOSThread()
			for r := range requests {
				r.done <- r.cmd.Start()
			}
		}()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	requests <- request{cmd, done}
	return <-done
}
