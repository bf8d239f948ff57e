package protocol

import (
	"errors"
	"net"
	"os"
	"time"
)

// The connection timeouts: connect_timeout bounds the connection phase
// (Listener.ConnectTimeout), wait_timeout the wait for a command,
// net_read_timeout the rest of a packet and net_write_timeout a write;
// the server sets the last three on the Conn once its client has logged
// in, and again when the session changes them. A binlog dump has none of
// them (see Conn.TakeDump).

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func (c *Conn) setReadDeadline(d int64) {
	if d > 0 {
		_ = c.Conn.SetReadDeadline(time.Now().Add(time.Duration(d)))
	} else {
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
}

// disconnectIdle tells a client idle past wait_timeout why the connection
// ends (ER_CLIENT_INTERACTION_TIMEOUT).
func (c *Conn) disconnectIdle() {
	payload := append([]byte{0xff, 0xbf, 0x0f}, "#HY000The client was disconnected by the server because of inactivity. See wait_timeout and interactive_timeout for configuring this behavior."...)
	n := len(payload)
	_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.w.Write(append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 0}, payload...))
}
