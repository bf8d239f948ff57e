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
