// Package launch starts and stops server processes for the integration
// tests, `lockstep bench` and `lockstep workload`: the options a Lockstep
// server on loopback gets (ServeArgs), how a process is started so that it
// never outlives its starter, how to tell it is ready, and how it is
// stopped. MariaDB servers are started through the same Process.
//
// Every process started here is started by child.Start: it is killed if
// the starter dies, so a failed test or an interrupted benchmark leaves no
// server behind. A Process's log file gets its standard output and error.
package launch

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockstepdb/lockstep/internal/child"
)

// Lockstep describes a `lockstep serve` on 127.0.0.1.
type Lockstep struct {
	DataDir  string
	Port     int
	HTTPPort int // 0: no HTTP endpoint
	// ServerID, if not 0, is --server-id.
	ServerID int
	// Extra are further options, after these.
	Extra []string
}

// Args are the command-line arguments of the server, after the binary.
func (l Lockstep) Args() []string {
	args := []string{"serve", "--bind-address=127.0.0.1", "--port=" + strconv.Itoa(l.Port),
		"--http-port=" + strconv.Itoa(l.HTTPPort), "--datadir=" + l.DataDir}
	if l.ServerID != 0 {
		args = append(args, "--server-id="+strconv.Itoa(l.ServerID))
	}
	return append(args, l.Extra...)
}

// Process is a started server process.
type Process struct {
	Cmd *exec.Cmd
	// LogPath is the file its output goes to.
	LogPath string
	exited  chan struct{}
}

// Start starts cmd with its output appended to the file at logPath. The
// process gets its own process group, so that a terminal's Ctrl-C or a
// signal meant for the starter does not reach it (the starter stops it
// in order), and dies with the starter (child.Start).
func Start(cmd *exec.Cmd, logPath string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := child.Start(cmd); err != nil {
		f.Close()
		return nil, err
	}
	p := &Process{Cmd: cmd, LogPath: logPath, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.exited) }()
	return p, nil
}

// Exited is closed once the process has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// ErrExited is returned by the waits when the process exits first.
var ErrExited = errors.New("the server exited at start")

// WaitListening waits until something accepts TCP connections on
// 127.0.0.1:port, the process exits (ErrExited), or timeout passes.
func (p *Process) WaitListening(port int, timeout time.Duration) error {
	return p.wait(timeout, func() error { return dial(port) })
}

// dial connects to 127.0.0.1:port and hangs up.
func dial(port int) error {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 200*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err
}

// WaitAnswers waits until the server at dsn answers a ping (go-sql-driver
// must be registered as "mysql"), the process exits (ErrExited), or
// timeout passes.
func (p *Process) WaitAnswers(dsn string, timeout time.Duration) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return p.wait(timeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return db.PingContext(ctx)
	})
}

// WaitLogged is WaitListening that also waits for text in the process's
// log: a port found free may have been taken by another process, which
// would answer for a server that is still starting or about to refuse.
func (p *Process) WaitLogged(text string, port int, timeout time.Duration) error {
	return p.wait(timeout, func() error {
		if b, _ := os.ReadFile(p.LogPath); !strings.Contains(string(b), text) {
			return fmt.Errorf("its log does not say %q yet", text)
		}
		return dial(port)
	})
}

func (p *Process) wait(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%w; its log (%s) ends:\n%s", ErrExited, p.LogPath, p.Tail(20))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not answer in %v: %v; its log (%s) ends:\n%s", timeout, err, p.LogPath, p.Tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the process gracefully (SIGTERM), or with SIGKILL if it has
// not exited after grace, and waits for it.
func (p *Process) Stop(grace time.Duration) {
	if !p.Running() {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.exited
	}
}

// Kill kills the process (SIGKILL) and waits for it.
func (p *Process) Kill() {
	if p.Running() {
		_ = p.Cmd.Process.Kill()
	}
	<-p.exited
}

// Tail is the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.LogPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
