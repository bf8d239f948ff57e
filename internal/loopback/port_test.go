package loopback

import (
	"net"
	"strconv"
	"testing"
)

func TestPortIsFreeAndBelowEphemeralRange(t *testing.T) {
	top := ephemeralStart()
	for range 20 {
		p, err := Port()
		if err != nil {
			t.Fatal(err)
		}
		if p < lowestPort || p >= top {
			t.Fatalf("port %d outside [%d, %d)", p, lowestPort, top)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
}

// TestPortsAreDistinct: Ports never gives one port twice, and every port
// it gives is free once it returns.
func TestPortsAreDistinct(t *testing.T) {
	top := ephemeralStart()
	for range 50 {
		ps, err := Ports(16)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, p := range ps {
			if seen[p] || p < lowestPort || p >= top {
				t.Fatalf("Ports(16) = %v: %d twice or out of range", ps, p)
			}
			seen[p] = true
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ps[0]))
		if err != nil {
			t.Fatalf("port %d is not free: %v", ps[0], err)
		}
		l.Close()
	}
}
