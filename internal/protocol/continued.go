package protocol

import (
	"encoding/binary"
	"errors"
)

// Replies continued over several executions.
//
// The protocol library (vitess) answers a COM_STMT_EXECUTE with one
// result: a result set or an OK or an error. A prepared CALL is answered
// in MySQL with every result set its procedure produced, then an OK (or
// the error that ended it), each but the last with
// SERVER_MORE_RESULTS_EXISTS. To send the rest, the server's handler,
// before it sends the first part, calls Continue with a command: the
// next time the library reads a command, it reads that one instead of
// the client's, a COM_STMT_EXECUTE of a statement the handler answers
// with the next part it holds, and so on until the handler no longer
// calls Continue. The client sees one reply: the packets of each part
// are renumbered to follow the previous part's on the wire.
//
// Invariants:
//
//   - Continue is called at a packet boundary of the server's stream (by
//     the handler, before it writes anything of its reply), so from then
//     on every packet's header is seen whole here.
//   - While a reply is continued, a server packet's wire sequence is the
//     library's plus shift; last is the wire sequence of the last one
//     written. The library numbers each part from 1 (after the command
//     numbered 0), so shift becomes last when the next part begins.
//   - The client sends nothing while it reads the reply, so nothing is
//     read from the socket until the last part has been written. The
//     handler does not count the injected commands as statements.

// continued is the state of a continued reply. It is used only by the
// connection's own goroutine (the library's reads and writes).
type continued struct {
	next    []byte // the command the library reads next, nil once read
	shift   byte
	last    byte
	hdr     [4]byte // the header of the server packet being written
	nhdr    int     // its bytes seen
	left    int     // payload bytes of that packet still to be written
	scratch []byte
}

// errContinuedMidPacket is returned if the library reads a command while
// a packet of its reply is unfinished, which would break the invariant.
var errContinuedMidPacket = errors.New("protocol: a continued reply was cut mid-packet")

// ContinueExecute makes the library's next command a COM_STMT_EXECUTE of
// statement id (no parameters, no cursor), answered as part of the
// reply now being written (see above). The handler registers the
// statement with the library.
func (c *Conn) ContinueExecute(id uint32) {
	cmd := make([]byte, 4, 14)
	cmd = append(cmd, comStmtExecute)
	cmd = binary.LittleEndian.AppendUint32(cmd, id)
	cmd = append(cmd, 0)                                       // no cursor
	cmd = binary.LittleEndian.AppendUint32(cmd, 1)             // iteration count
	cmd[0], cmd[1], cmd[2], cmd[3] = byte(len(cmd)-4), 0, 0, 0 // sequence 0
	if c.follow == nil {
		c.follow = &continued{}
	}
	c.follow.next = cmd
}

// CursorRequested reports whether the last COM_STMT_EXECUTE the client
// sent asked for a cursor (the library then answers it from another
// goroutine, fetch by fetch: such a reply cannot be continued).
func (c *Conn) CursorRequested() bool { return c.execCursor }

// nextContinued gives the library the next part's command, if a reply
// is being continued: true if it did. A continued reply ends when the
// library reads a command and none was set.
func (c *Conn) nextContinued() (bool, error) {
	f := c.follow
	if f == nil {
		return false, nil
	}
	if f.nhdr != 0 || f.left != 0 {
		c.follow = nil
		return false, errContinuedMidPacket
	}
	if f.next == nil {
		c.follow = nil
		return false, nil
	}
	c.out, f.next = f.next, nil
	f.shift = f.last
	return true, nil
}

// renumber returns p, the server's bytes, with the packets' sequence
// numbers shifted (a copy, if any changes: p belongs to the writer), and
// notes the last one.
func (f *continued) renumber(p []byte) []byte {
	out, copied := p, false
	for i := 0; i < len(p); {
		if f.left > 0 {
			n := min(f.left, len(p)-i)
			f.left -= n
			i += n
			continue
		}
		b := p[i]
		if f.nhdr == 3 {
			b += f.shift
			f.last = b
			if f.shift != 0 {
				if !copied {
					f.scratch = append(f.scratch[:0], p...)
					out, copied = f.scratch, true
				}
				out[i] = b
			}
		}
		f.hdr[f.nhdr] = b
		f.nhdr++
		i++
		if f.nhdr == 4 {
			f.nhdr = 0
			f.left = int(f.hdr[0]) | int(f.hdr[1])<<8 | int(f.hdr[2])<<16
		}
	}
	return out
}
