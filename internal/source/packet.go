package source

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxPayload is the largest payload of one MySQL packet; longer payloads
// continue in further packets, the last one shorter than this.
const maxPayload = 0xffffff

// packetWriter writes MySQL protocol packets with sequence numbers. A dump
// owns its connection's write side once the command is dispatched: vitess
// has written nothing for the command yet, so the first packet follows the
// command's sequence number 0.
type packetWriter struct {
	w   *bufio.Writer
	seq uint8
}

func newPacketWriter(w io.Writer) *packetWriter {
	return &packetWriter{w: bufio.NewWriterSize(w, 64<<10), seq: 1}
}

// write writes one logical packet made of the concatenation of parts.
func (p *packetWriter) write(parts ...[]byte) error {
	n := 0
	for _, b := range parts {
		n += len(b)
	}
	for {
		chunk := min(n, maxPayload)
		var hdr [4]byte
		hdr[0], hdr[1], hdr[2], hdr[3] = byte(chunk), byte(chunk>>8), byte(chunk>>16), p.seq
		p.seq++
		if _, err := p.w.Write(hdr[:]); err != nil {
			return err
		}
		left := chunk
		for left > 0 {
			b := parts[0]
			k := min(len(b), left)
			if _, err := p.w.Write(b[:k]); err != nil {
				return err
			}
			left -= k
			if k == len(b) {
				parts = parts[1:]
			} else {
				parts[0] = b[k:]
			}
		}
		n -= chunk
		if chunk < maxPayload {
			return nil
		}
		// A payload of exactly a multiple of maxPayload ends with an empty
		// packet; the loop writes it on the next turn.
	}
}

func (p *packetWriter) flush() error { return p.w.Flush() }

// writeError writes an ERR packet.
func (p *packetWriter) writeError(e *Error) error {
	b := []byte{0xff}
	b = binary.LittleEndian.AppendUint16(b, e.Code)
	b = append(b, '#')
	b = append(b, e.State...)
	b = append(b, e.Message...)
	if err := p.write(b); err != nil {
		return err
	}
	return p.flush()
}

// writeEOF writes the EOF packet that ends a non-blocking dump.
func (p *packetWriter) writeEOF() error {
	if err := p.write([]byte{0xfe, 0, 0, 0, 0}); err != nil {
		return err
	}
	return p.flush()
}

// readPacket reads one logical packet (joining continuation packets),
// ignoring sequence numbers: a semi-sync replica numbers its ACKs on its
// own.
func readPacket(r *bufio.Reader, limit int) ([]byte, error) {
	var out []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, err
		}
		n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
		if len(out)+n > limit {
			return nil, errPacketTooBig
		}
		start := len(out)
		out = append(out, make([]byte, n)...)
		if _, err := io.ReadFull(r, out[start:]); err != nil {
			return nil, err
		}
		if n < maxPayload {
			return out, nil
		}
	}
}

var errPacketTooBig = errors.New("packet from replica too large")

// Error is a MySQL error sent to the replica (and returned by Dump).
type Error struct {
	Code    uint16
	State   string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("Error %d (%s): %s", e.Code, e.State, e.Message) }

// MySQL error numbers used by the source.
const (
	// ER_MASTER_FATAL_ERROR_READING_BINLOG: every reason a dump cannot
	// start or go on (MySQL reports them all under this number).
	ErrFatalReadingBinlog = 1236
	// ER_SPECIFIC_ACCESS_DENIED_ERROR.
	ErrSpecificAccessDenied = 1227
)

func fatal(format string, args ...any) *Error {
	return &Error{Code: ErrFatalReadingBinlog, State: "HY000", Message: fmt.Sprintf(format, args...)}
}
