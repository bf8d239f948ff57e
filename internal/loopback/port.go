// Package loopback hands out 127.0.0.1 ports for servers this program
// starts and names in their arguments (a client port, a cluster address).
//
// A port from Listen("127.0.0.1:0") comes from the kernel's ephemeral
// range, the same range every outgoing connection's source port and every
// other caller's ":0" draws from. Between closing the probe listener and
// the server binding the port, a client connection or another server can
// take it, and the server fails to start with "address already in use".
// Port draws below the ephemeral range instead, where only programs that
// name ports explicitly compete; the window is still there, but nothing
// on the machine picks those ports by chance.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowestPort is the bottom of the range Port draws from, above the
// well-known and most registered service ports.
const lowestPort = 20000

// Port returns a loopback port below the ephemeral range that is free
// now.
func Port() (int, error) {
	ports, err := Ports(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// Ports returns n distinct loopback ports below the ephemeral range,
// free now: each is held until all are found, so none is drawn twice
// (Port, called n times, may give one port twice).
func Ports(n int) ([]int, error) {
	top := ephemeralStart()
	if top <= lowestPort+1000 {
		return nil, fmt.Errorf("the ephemeral port range starts at %d, leaving no room below it", top)
	}
	ports := make([]int, 0, n)
	held := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries == 200*n {
			return nil, errors.New("no free loopback ports below the ephemeral range")
		}
		p := lowestPort + rand.IntN(top-lowestPort)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue // taken, or held already
		}
		held = append(held, l)
		ports = append(ports, p)
	}
	return ports, nil
}

// ephemeralStart is the first port of Linux's ephemeral range, or the
// kernel default where that cannot be read.
func ephemeralStart() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return linuxDefault
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 0 {
		return linuxDefault
	}
	return n
}
