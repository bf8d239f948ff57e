package protocol

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// TLS is terminated in the wire wrapper, below the protocol library
// (vitess), not by it: the wrapper must see the plaintext to take over
// binlog dumps (wire.go), and a replica's dump and semi-sync ACKs must
// work over TLS like any other command. The protocol library is never
// given a TLS configuration and never sees an SSL request; what it sees is
// a client that sent its handshake response in plain, which the wrapper
// makes true:
//
//   - the server's greeting announces CLIENT_SSL (the library leaves it
//     out, having no TLS configuration);
//   - the client's SSLRequest (a 32-byte handshake response with
//     CLIENT_SSL set, sequence 1) is answered with the TLS handshake here
//     and not passed on;
//   - for the rest of the connection phase, packets on the wire are
//     numbered one ahead of the library's count (the SSLRequest took a
//     number): the wrapper subtracts the difference from the client's
//     packets and adds it to the server's. The phase ends with the
//     server's OK or ERR packet; from the first command on (sequence 0
//     again) nothing is renumbered.
//
// Authentication (the server's auth.go) uses the same mechanism for the exchanges the
// library has no API for (caching_sha2_password's fast-auth result, its
// request for the password, the RSA public key): AuthWrite and AuthRead
// send and receive packets the library does not count, and widen the
// difference by one each.
//
// Invariant: during the connection phase, wire sequence = library
// sequence + shift, in both directions; lastSeq is the wire sequence of
// the last packet read, so the server's next packet is lastSeq+1.

// Capability flags of the handshake response.
const (
	clientInteractive = 0x0400
	// CLIENT_MULTI_STATEMENTS and CLIENT_MULTI_RESULTS.
	clientMultiStatements = 1 << 16
	clientMultiResults    = 1 << 17
	clientSSL             = 0x0800
)

// connPhase is the connection phase's renumbering state. It is used only
// by the connection's own goroutine until done is set.
type connPhase struct {
	shift   byte
	lastSeq byte
	greeted bool
	done    atomic.Bool
}

// fromClient maps a client packet's wire sequence to the library's.
func (p *connPhase) fromClient(seq byte) byte {
	p.lastSeq = seq
	return seq - p.shift
}

// isSSLRequest reports whether the packet at the head of r (header
// already peeked) is an SSLRequest: sequence 1, 32 bytes, CLIENT_SSL set.
func isSSLRequest(r *bufio.Reader, seq byte, size int) bool {
	if seq != 1 || size != 32 {
		return false
	}
	b, err := r.Peek(8)
	return err == nil && binary.LittleEndian.Uint32(b[4:])&clientSSL != 0
}

// tlsHandshakeTimeout bounds the TLS handshake when connect_timeout does
// not (it bounds the whole connection phase).
const tlsHandshakeTimeout = 10 * time.Second

// startTLS consumes the SSLRequest and runs the TLS handshake; reads and
// writes go through TLS from here on.
func (c *Conn) startTLS() error {
	if _, err := c.r.Discard(4 + 32); err != nil {
		return err
	}
	c.phase.lastSeq = 1
	c.phase.shift = 1
	c.l.TLSStats.count(false)
	tc := tls.Server(&bufferedConn{Conn: c.Conn, r: c.r}, c.l.TLS)
	if c.connectDeadline.IsZero() {
		_ = c.Conn.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	}
	err := tc.Handshake()
	_ = c.Conn.SetDeadline(c.connectDeadline)
	if err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.l.TLSStats.count(true)
	c.r = newReader(tc)
	c.w = tc
	c.secure.Store(tc)
	return nil
}

// TLSStats counts TLS handshakes (Ssl_accepts, Ssl_finished_accepts).
type TLSStats struct{ Accepts, Finished atomic.Uint64 }

// count counts a handshake begun or, with finished, completed (nothing
// if t is nil: a listener made by a test).
func (t *TLSStats) count(finished bool) {
	switch {
	case t == nil:
	case finished:
		t.Finished.Add(1)
	default:
		t.Accepts.Add(1)
	}
}

// bufferedConn reads through r: bytes the client sent right after its
// SSLRequest (its TLS ClientHello) may already be in the wrapper's buffer.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// writeConnectionPhase collects the server's bytes into whole packets,
// renumbers each, marks the greeting as offering TLS, and ends the phase
// after an OK or ERR packet. Bytes after that pass straight through.
func (c *Conn) writeConnectionPhase(p []byte) (int, error) {
	c.pending = append(c.pending, p...)
	for len(c.pending) >= 4 && !c.phase.done.Load() {
		size := int(c.pending[0]) | int(c.pending[1])<<8 | int(c.pending[2])<<16
		if len(c.pending) < 4+size {
			return len(p), nil
		}
		pkt := c.pending[:4+size]
		pkt[3] += c.phase.shift
		switch {
		case !c.phase.greeted:
			c.phase.greeted = true
			if c.l.TLS != nil {
				offerTLS(pkt[4:])
			}
		case size > 0 && (pkt[4] == 0x00 || pkt[4] == 0xff):
			c.phase.done.Store(true) // OK or ERR: the phase is over
		}
		if _, err := c.w.Write(pkt); err != nil {
			return 0, err
		}
		c.pending = c.pending[4+size:]
	}
	if c.phase.done.Load() && len(c.pending) > 0 {
		rest := c.pending
		c.pending = nil
		if _, err := c.w.Write(rest); err != nil {
			return 0, err
		}
	}
	if len(c.pending) == 0 {
		c.pending = nil
	}
	return len(p), nil
}

// offerTLS sets CLIENT_SSL in a HandshakeV10 payload: protocol version,
// NUL-terminated server version, connection id (4), auth data (8), filler
// (1), then the low two bytes of the capability flags.
func offerTLS(payload []byte) {
	if len(payload) == 0 || payload[0] != 10 {
		return
	}
	for i := 1; i < len(payload); i++ {
		if payload[i] == 0 {
			at := i + 1 + 4 + 8 + 1
			if at+1 < len(payload) {
				payload[at+1] |= clientSSL >> 8
			}
			return
		}
	}
}

var errAuthSequence = errors.New("packet out of sequence during authentication")

// AuthWrite sends one packet the protocol library does not count (see the
// comment at the top of the file).
func (c *Conn) AuthWrite(payload []byte) error {
	seq := c.phase.lastSeq + 1
	n := len(payload)
	pkt := append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
	if _, err := c.w.Write(pkt); err != nil {
		return err
	}
	c.phase.lastSeq = seq
	c.phase.shift++
	return nil
}

// AuthRead reads the client's answer to AuthWrite.
func (c *Conn) AuthRead() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return nil, err
	}
	size := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	if hdr[3] != c.phase.lastSeq+1 {
		return nil, errAuthSequence
	}
	if size > maxPacketBeforeLogin {
		return nil, errPacketTooLarge
	}
	payload := make([]byte, size)
	if _, err := io.ReadFull(c.r, payload); err != nil {
		return nil, err
	}
	c.phase.lastSeq = hdr[3]
	c.phase.shift++
	return payload, nil
}

// tlsConfig resolves --ssl, --ssl-cert, --ssl-key and --ssl-ca: nil when
// TLS is off; the given files; or, with none given, the data directory's
// generated set (made at first start).
