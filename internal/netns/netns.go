// Package netns builds small networks of Linux network namespaces on
// one machine, so that servers can be cut off from each other: each host
// is a namespace of its own, joined to the others by a veth pair on a
// bridge in the caller's namespace, with an address on a private /24.
// Cutting a host takes its end of the pair down (nothing reaches it or
// leaves it on the bridge); healing brings it back.
//
// A host's loopback stays reachable from the caller through Dial, which
// opens the socket from a thread that entered the host's namespace: a
// client can talk to a server on 127.0.0.1 in a host whatever the
// network does. Listen makes a listener inside a host the same way.
//
// It needs root and iproute2's ip; New says why when it cannot build the
// network, and everything it made is removed by Close (namespaces, and
// with them the veth pairs, and the bridge).
package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Network is a bridge and the hosts on it.
type Network struct {
	bridge string
	Hosts  []*Host
}

// Host is one namespace on the network.
type Host struct {
	NS   string // the namespace's name (ip netns)
	IP   string // its address on the bridge
	link string // its end of the veth pair, on the bridge
}

// ErrUnavailable wraps the reason namespaces cannot be made here.
var ErrUnavailable = errors.New("network namespaces are not available")

// New makes a network of n hosts whose names start with prefix (a few
// letters and digits: link names are limited to 15 characters).
func New(prefix string, n int) (*Network, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: they need root", ErrUnavailable)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("%w: iproute2's ip is not installed", ErrUnavailable)
	}
	nw := &Network{bridge: prefix + "br"}
	if err := ip("link", "add", nw.bridge, "type", "bridge"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	subnet := 10 + os.Getpid()%240
	ok := false
	defer func() {
		if !ok {
			nw.Close()
		}
	}()
	if err := ip("link", "set", nw.bridge, "up"); err != nil {
		return nil, err
	}
	for i := 1; i <= n; i++ {
		h := &Host{NS: fmt.Sprintf("%s-%d", prefix, i), IP: fmt.Sprintf("10.%d.77.%d", subnet, i), link: fmt.Sprintf("%sv%d", prefix, i)}
		if err := ip("netns", "add", h.NS); err != nil {
			return nil, err
		}
		nw.Hosts = append(nw.Hosts, h)
		for _, args := range [][]string{
			{"link", "add", h.link, "type", "veth", "peer", "name", h.link + "p"},
			{"link", "set", h.link + "p", "netns", h.NS},
			{"link", "set", h.link, "master", nw.bridge, "up"},
			{"-n", h.NS, "addr", "add", h.IP + "/24", "dev", h.link + "p"},
			{"-n", h.NS, "link", "set", h.link + "p", "up"},
			{"-n", h.NS, "link", "set", "lo", "up"},
		} {
			if err := ip(args...); err != nil {
				return nil, err
			}
		}
	}
	ok = true
	return nw, nil
}

// Close removes the hosts and the bridge.
func (nw *Network) Close() {
	for _, h := range nw.Hosts {
		_ = ip("netns", "del", h.NS)
	}
	_ = ip("link", "del", nw.bridge)
}

// Cut isolates h from the network.
func (h *Host) Cut() error { return ip("link", "set", h.link, "down") }

// Heal joins h to the network again.
func (h *Host) Heal() error { return ip("link", "set", h.link, "up") }

// Command is name run with args inside h (ip netns exec, which execs it:
// the process is the command's own).
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.NS, name}, args...)...)
}

// Dial opens a TCP connection to addr from inside h.
func (h *Host) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := h.in(func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	})
	return c, err
}

// Listen listens on TCP address addr inside h.
func (h *Host) Listen(addr string) (net.Listener, error) {
	var l net.Listener
	err := h.in(func() (err error) {
		l, err = net.Listen("tcp", addr)
		return err
	})
	return l, err
}

// in runs f on a thread that entered h's namespace, so the sockets f
// makes are h's. The thread ends with its goroutine (a locked thread is
// never reused); the sockets stay in the namespace and work from any
// thread.
func (h *Host) in(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := os.Open("/var/run/netns/" + h.NS)
		if err != nil {
			done <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
