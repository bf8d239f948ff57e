package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// TestCutAndHeal: hosts reach each other over the bridge; a cut host
// reaches no one and no one reaches it, while its own loopback stays
// reachable through Dial; healed, it is reachable again.
func TestCutAndHeal(t *testing.T) {
	nw, err := New(fmt.Sprintf("nt%d", os.Getpid()%10000), 2)
	if errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	a, b := nw.Hosts[0], nw.Hosts[1]
	// Listeners in b, on its bridge address and on its loopback.
	for _, addr := range []string{net.JoinHostPort(b.IP, "7000"), "127.0.0.1:7001"} {
		l, err := b.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	reach := func(h *Host, addr string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		c, err := h.Dial(ctx, addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	across := net.JoinHostPort(b.IP, "7000")
	deadline := time.Now().Add(10 * time.Second)
	for !reach(a, across) {
		if time.Now().After(deadline) {
			t.Fatal("a cannot reach b over the bridge")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := b.Cut(); err != nil {
		t.Fatal(err)
	}
	if reach(a, across) {
		t.Fatal("a reached b after b was cut off")
	}
	if !reach(b, "127.0.0.1:7001") {
		t.Fatal("b's loopback is unreachable through Dial while b is cut off")
	}
	if err := b.Heal(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for !reach(a, across) {
		if time.Now().After(deadline) {
			t.Fatal("a cannot reach b after the heal")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
